// How far apart the cores of a node's ranks are: the time a cache line takes to go
// from one rank's core to another's and back. On a virtual machine the host may place
// the two virtual CPUs on cores that share a last-level cache (a round trip of tens of
// nanoseconds) or on cores that do not (hundreds), and move them between the two while
// a job runs; over shared memory every transfer that MPI makes between the ranks costs
// what that distance says (docs/performance.md, 2026-11-29 entry). hvd-bench measures
// it at the start and at the end of a run, so each figure says where it was taken.
#pragma once

namespace hvdbench {

// The round trip's median in nanoseconds between node ranks 0 and 1 of world rank 0's
// node, the same value on every rank. Negative where it was not measured:
// kNoPeerOnNode (rank 0 has no other rank on its node) or kGaveUp (the two ranks did
// not answer each other within half a second: a core shared with another process).
// Collective over MPI_COMM_WORLD.
inline constexpr double kNoPeerOnNode = -1;
inline constexpr double kGaveUp = -2;
double core_round_trip_ns();

}  // namespace hvdbench
