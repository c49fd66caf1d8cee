// The compact record the timeline queues on the recording thread and turns into
// Chrome-trace JSON on its writer thread. Strings are interned: an event carries ids,
// and each batch carries the text of the ids it introduces, in id order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvd {

enum class TraceKind : uint8_t {
  ProcessName,  // metadata: process `pid` shows as string `label`
  Begin,        // phase `label` opens on `pid`; value[0] >= 0 adds "bytes"
  End,          // innermost open phase on `pid` closes; label >= 0 adds "status",
                // value[0] > 0 "dtype" (string value[0] - 1), value[1] > 0 "shape" (value[1] - 1)
  RankReady,    // instant on `pid`: rank value[0] has submitted the tensor
  CycleStart,   // global instant: one negotiation round starts
  Counter,      // counter `label`: value[0..2] = local, cross, global
  Dropped,      // global instant: value[0] events were dropped (writer behind)
  StepCounter,  // counter `label` at a step's end: value[0] = exposed wait, value[1] =
                // the rest of the step (us), stacked to the step's wall time
};

struct TraceEvent {
  TraceKind kind;
  int32_t pid;
  int32_t label;  // interned string id, -1 for none
  int64_t ts_ns;  // since the timeline started
  int64_t value[3];
};

// What the writer takes in one swap: events, and the strings they introduced.
struct TraceBatch {
  std::vector<TraceEvent> events;
  std::vector<std::string> new_strings;  // ids first_new_id, first_new_id + 1, ...
  int32_t first_new_id = 0;

  void clear() {
    events.clear();
    new_strings.clear();
  }
  bool empty() const { return events.empty() && new_strings.empty(); }
};

}  // namespace hvd
