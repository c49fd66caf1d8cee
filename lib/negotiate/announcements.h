// The table of announcements: what each rank said by name in the rounds' messages
// (a request's spec, a refusal, a join, a coordinator's timeout), and when a tensor is
// complete because every member of its process set has announced it, refused it or
// joined. Every rank applies the same messages in the same order, so every rank's
// table holds the same entries and completes the same tensors in the same order.
//
// The table knows nothing of this rank's own requests or of the response cache: it
// hands completed responses back (Completed), and the Controller queues them.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "negotiate/wire.h"
#include "queue/process_sets.h"
#include "queue/response.h"
#include "timeline/timeline.h"

namespace hvd {

// A tensor the table completed, in the order they completed.
struct Completed {
  Response response;
  // Agreed with every member present: the Controller may keep it in the response
  // cache. False for failures that never come back the same (timeouts, the end of a
  // join) and for tensors agreed while ranks had joined.
  bool cacheable = false;
};

// A tensor announced by some but not all ranks, with the time first seen: the stall
// inspector reads these.
struct StalledTensor {
  std::string key;
  std::string name;
  int32_t process_set;
  double first_seen;
  std::vector<int> missing_ranks;
};

class AnnouncementTable {
 public:
  AnnouncementTable(int world_size, ProcessSetTable* sets);

  // One rank's entry of a round's messages (any kind but Tuning, which the Controller
  // reads itself). Completed tensors are appended to *done.
  void apply(int rank, WireEntry&& e, double now, std::vector<Completed>* done);
  // Entries that waited on a refused call now completed (see Announcement::deferred),
  // applied until none is left.
  void replay_deferred(double now, std::vector<Completed>* done);
  // At the end of a round's messages: the other members of groups whose member failed
  // to agree fail too (fail_group_members), then the deferred entries that frees.
  void end_of_messages(double now, std::vector<Completed>* done);

  std::vector<StalledTensor> stalled(double older_than) const;
  // The refusals announced by other ranks that no call of this rank has met yet, as
  // "rank R refused 'name': reason" joined by "; " (empty: none). A rank that refuses
  // and then exits shuts the job down in the same round: its reason is then what a
  // peer's later call of that name should say, not only that a rank left.
  std::string unmet_refusals(int my_rank) const;

  // Join (global): whether any rank has joined and not yet been released by the last
  // one, and whether an operation on a set waits for a joined rank that will not
  // submit it (every operation but allreduce).
  bool any_joined() const { return joined_count_ > 0; }
  bool blocked_by_join(OpType op, int32_t process_set) const;
  // Drops the announcements blocked by a join, alike on every rank.
  void drop_blocked_by_join();
  // Forgets the announcements on a removed process set.
  void drop_process_set(int32_t id);

  void set_timeline(Timeline* timeline) { timeline_ = timeline; }

 private:
  struct Announcement {
    std::string name;
    int32_t process_set = 0;
    std::vector<TensorSpec> specs;  // by set rank
    std::vector<char> have;
    int count = 0;
    double first_seen = 0;
    // Set ranks that refused the call (empty: none did), and the lowest one's message.
    std::vector<char> refused;
    int refusing_rank = -1;  // world rank
    int refusals = 0;
    std::string refusal;
    // A refusing rank may call again under the name before the others have announced
    // the refused call: its new announcement waits here until this one completes.
    std::vector<std::pair<int, WireEntry>> deferred;
  };
  using Table = std::unordered_map<std::string, Announcement>;

  // Completes an announcement if every member has announced it or has joined.
  bool try_complete(const std::string& key, Announcement& a, const ProcessSet& set,
                    std::vector<Completed>* done);
  // The failure of an announcement some member refused.
  Response refused_response(const std::string& key, const Announcement& a,
                            const ProcessSet& set) const;
  // Whether this rank refused the announced call (it has no request of it).
  bool refused_locally(const Announcement& a) const;
  static bool refused_locally(const Announcement& a, const ProcessSet& set);
  // Removes a completed announcement; its deferred entries go to replay_.
  void erase_announcement(Table::iterator it);
  void record_join(int world_rank, const std::string& key, const std::string& name,
                   std::vector<Completed>* done);
  void fail_group_members(std::vector<Completed>* done);

  int world_size_;
  ProcessSetTable* sets_;
  Table table_;
  std::vector<std::string> table_order_;  // keys in first-seen order, for the inspector
  std::vector<std::pair<int, WireEntry>> replay_;  // deferred entries, applied next
  // Groups (grouped allreduce, allgather, reducescatter) whose member failed to agree
  // this round: their other members fail too at the round's end (fail_group_members),
  // or a rank that submitted more members than its peers would wait on them for ever.
  struct FailedGroup {
    std::string prefix;  // the members' names are "<prefix>.<index>"
    int32_t process_set = 0;
    int32_t members = 0;  // the largest group size any rank gave
    Error error;
  };
  std::vector<FailedGroup> failed_groups_;
  Timeline* timeline_ = nullptr;

  // Which world ranks have joined, in the order their announcements were applied,
  // identical on every rank.
  std::vector<char> joined_;
  int joined_count_ = 0;
  int last_joined_ = -1;
};

}  // namespace hvd
