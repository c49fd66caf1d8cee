// Progress of the collective in flight, for the operation watchdog (observe/op_watchdog.h).
// The code that calls MPI in chunks, pieces, rounds or ring steps reports each one done here:
// one relaxed add and one relaxed store, read by the watchdog thread about once a
// second. A single blocking MPI call reports only when it returns: the chunk sizes
// (HVD_ALLREDUCE_CHUNK_BYTES, HVD_FUSION_PIECE_BYTES) bound how long that can take.
#pragma once

#include <atomic>
#include <cstdint>

namespace hvd {

struct OpProgress {
  std::atomic<int64_t> bytes{0};    // of the operation's buffer done since it began
  std::atomic<int64_t> ticks{0};    // chunks, pieces or steps done since it began
  std::atomic<int64_t> last_ns{0};  // steady clock at the last tick
  // Tests only (HVD_TEST_PROGRESS_DELAY_MS): a pause after each tick, so an operation
  // progresses slowly but steadily on one machine.
  std::atomic<int64_t> test_delay_us{0};
};

OpProgress& op_progress();

// A chunk, piece or step of the operation in flight is done; bytes of its buffer (0
// for a step that moves data already counted).
void note_op_progress(int64_t bytes);

}  // namespace hvd
