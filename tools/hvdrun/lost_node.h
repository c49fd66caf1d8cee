// A node lost from a job: every process there gone without a word (a machine that
// crashed, a node killed by its scheduler). Its ranks' monitors leave no exit marker,
// and the launcher only says it lost a connection, without naming the node (MPICH's
// Hydra: "control_cb (pm/pmiserv/pmiserv_cb.c:206): assert (!closed) failed") or in a
// message among its own (Open MPI: "ORTE has lost communication with a remote daemon
// ... Remote daemon: [[1234,0],1] on node NAME"), and ends the job at once. hvdrun
// names the node and the ranks it held from what it observed:
//   - the launcher's own stderr carries one of those lines;
//   - Hydra: which of the launcher's children (one per host: the ssh, or the remote
//     launcher, that runs `hydra_pmi_proxy ... --proxy-id N`) ended while the
//     launcher still ran: the proxies of surviving nodes end only after it;
//   - Open MPI: the node its message names;
//   - no rank of that node reported its exit;
// and the rank placement it asked for (-H/--hostfile slots, filled in order).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hosts.h"
#include "mpi_detect.h"

namespace hvdrun {

// The ranks each host of hosts holds, in order, as Hydra places them (slots filled host
// by host, round the list again for more ranks than slots) and as Open MPI does with
// hvdrun's default --map-by slot (as long as the ranks fit the slots). Empty when the
// placement is not known: no hosts, Open MPI beyond its slots, or a mapping of the
// user's own (--binding-args).
std::vector<std::vector<int>> planned_ranks_by_host(const HostList& hosts, int64_t num_proc,
                                                    MpiFlavor flavor, bool own_mapping);

// What the launcher's stderr says of a lost connection, fed a chunk at a time.
class LauncherLossLines {
 public:
  void feed(std::string_view text);
  bool lost_connection() const { return lost_; }
  // Open MPI: the node its message names.
  const std::optional<std::string>& named_node() const { return node_; }
  // Open MPI: the job family of the daemon lost ("[[4242,0],1]": 4242), which names
  // the session directory the job had on that node (ompi.NODE.UID/jf.4242).
  const std::optional<long>& job_family() const { return job_family_; }

 private:
  void line(std::string_view text);
  std::string partial_;
  bool lost_ = false;
  bool in_orte_message_ = false;
  std::optional<std::string> node_;
  std::optional<long> job_family_;
};

// The proxy id on a Hydra proxy's command line (NUL-separated words, as in
// /proc/PID/cmdline): the word after "--proxy-id", also inside a word that a remote
// shell gets whole. -1 if none.
// Open MPI's daemons likewise: `-mca ess_base_vpid K` (K >= 1) is K-1.
int hydra_proxy_id(std::string_view cmdline);
// Open MPI: the job family from a daemon's `-mca ess_base_jobid J` (J >> 16); -1 if none.
long openmpi_job_family(std::string_view cmdline);

// The launcher's children that start Hydra's proxies, and which of them ended while
// the launcher still ran. Watched through pidfds, which poll() reports readable when
// the process ends, so the wait that relays the job's output wakes at once.
class LauncherChildren {
 public:
  explicit LauncherChildren(pid_t launcher) : launcher_(launcher) {}
  ~LauncherChildren();
  LauncherChildren(const LauncherChildren&) = delete;
  LauncherChildren& operator=(const LauncherChildren&) = delete;
  // Takes on children started since the last call.
  void scan();
  // The pidfds still to watch.
  std::vector<int> fds() const;
  // Notes the children that ended: the first seen to end, while the launcher had not
  // yet ended, are the ones whose end it reacted to.
  void check();
  const std::set<int>& ended_first() const { return ended_first_; }
  // Sends sig to each child not seen to end, and to its process group where it has one
  // of its own (Open MPI's rsh starters do): what the launcher started on this host
  // for a node it lost, which the launcher's own end does not reach.
  void signal_running(int sig);
  bool any_known() const { return !children_.empty(); }
  // Open MPI: the job's family, from its daemons' command lines; -1 if none seen.
  long job_family() const { return job_family_; }

 private:
  struct Child {
    int proxy_id = -1;
    int reads = 1;  // of its command line
    int pidfd = -1;
    bool ended = false;
  };
  pid_t launcher_;
  std::map<pid_t, Child> children_;
  std::set<int> ended_first_;  // proxy ids
  bool first_seen_ = false;    // some child's end was seen
  long job_family_ = -1;
};

struct LostNode {
  std::string host;
  std::vector<int> ranks;  // empty: not known
};

// The hosts lost, from what was observed: the launcher's lines (lines), which
// proxies ended first (Hydra: proxy k is the k-th host holding ranks), the ranks
// that reported their exit. Empty when nothing says a node was lost, or the
// observations do not point at whole hosts.
std::vector<LostNode> find_lost_nodes(const LauncherLossLines& lines, const std::set<int>& proxies_ended_first,
                                      const HostList& hosts,
                                      const std::vector<std::vector<int>>& ranks_by_host,
                                      const std::set<int>& ranks_reported);

// Removes Open MPI's session directory of the job on a lost node, where this machine
// sees it (the node's /tmp is this one's: a node on this machine, a network lab): the
// node's daemon died before it could. Only $TMPDIR/ompi.HOST.UID/jf.FAMILY, the job's
// own, owned by this user and not a link; then ompi.HOST.UID if that left it empty.
void remove_lost_session_dir(const std::string& host, long job_family);

// "host node2 was lost (ranks 2,3)", several joined by "; ".
std::string describe_lost_nodes(const std::vector<LostNode>& lost);

}  // namespace hvdrun
