// The background thread's pacing: when a round starts (a request of this rank's, a
// peer's doorbell, the cycle time), how long a burst of requests may keep arriving
// before the round takes it, and how the thread waits on a round's messages. Each
// wait first polls briefly, because the next event usually follows within
// microseconds, and then sleeps, so an idle job holds no core.
#include "runtime/background.h"
#include "runtime/enqueue.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <thread>

namespace hvd {

namespace {

void sleep_us(int64_t us) {
  timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>((us % 1000000) * 1000)};
  nanosleep(&ts, nullptr);
}

}  // namespace

bool BackgroundLoop::poll_doorbell() {
  bool rang = false;
  while (true) {
    int flag = 0;
    MPI_Test(&doorbell_request_, &flag, MPI_STATUS_IGNORE);
    if (!flag) break;
    if (doorbell_value_ >= round_) rang = true;  // older values are stale duplicates
    MPI_Irecv(&doorbell_value_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kDoorbellTag, rt_.control,
              &doorbell_request_);
  }
  return rang;
}

bool BackgroundLoop::doorbell_rang() {
  if (!poll_doorbell()) return false;
  // A peer started a round and this rank has nothing for it. Right after a round that
  // completed some of its work, its application is likely about to enqueue the next
  // request (a loop of one allreduce is just returning from hvd_wait). Joining at once
  // runs a round in which that tensor cannot complete, and the request then needs a
  // round of its own. Worse, the ranks stay out of phase: the rank that posts a round
  // last finishes it first (its peers' data is already there), so its next doorbell
  // reaches them just as they finish, before their own next request, every time.
  // Measured on the lab (2 nodes, a lone 4 KB allreduce): one run in three locked into
  // that, two rounds and 150-330 us per call instead of one round and 43 us. So such a
  // rank waits for its own request, at most the burst gap (and the cycle time), then
  // joins with whatever it has.
  if (!last_round_completed_ || controller_.busy() || controller_.has_unannounced()) return true;
  const int64_t grace_us = std::min<int64_t>(
      rt_.params.burst_gap_us, static_cast<int64_t>(std::ceil(cycle_time_ms_ * 1e3)));
  if (grace_us > 0) rt_.queue.wait(grace_us);
  return true;
}

void BackgroundLoop::ring_doorbells() {
  int64_t value = round_;
  for (int r = 0; r < rt_.size; ++r) {
    if (r == rt_.rank) continue;
    // Eight bytes always go eagerly: the send returns without waiting for the peer.
    MPI_Send(&value, 1, MPI_INT64_T, r, kDoorbellTag, rt_.control);
  }
}

void BackgroundLoop::wait_for_round() {
  if (mode_ == Mode::Continue) return;
  // Just after activity the next request usually follows within microseconds (see
  // below): poll briefly, then sleep.
  const double spin_until = last_progress_ + rt_.params.bg_spin_us * 1e-6;
  if (rt_.size == 1) {
    // Alone: nobody to wait for. The brief poll matters here too: sleeping at once
    // made every call of a loop wake this thread, 17-20 us a lone allreduce instead
    // of 3-4 whenever the scheduler had put the caller on another CPU.
    while (now_seconds() < spin_until) {
      if (rt_.queue.ready()) return;
      std::this_thread::yield();
    }
    while (!rt_.queue.wait(kIdlePollUs)) {
    }
    return;
  }
  const int64_t poll_us = kPollUs;
  const int64_t idle_poll_us = kIdlePollUs;
  const double deadline = last_round_end_ + cycle_time_ms_ * 1e-3;
  // Just after activity the next request usually follows within microseconds (a
  // training step's next tensor, a loop's next call): poll briefly instead of paying
  // a sleep and a wake-up. Idle for longer, the thread sleeps. The poll yields: with
  // as many busy threads as cores (two ranks on two cores) the caller that is about
  // to push needs this core, and a plain spin held it off (a lone 4 KB allreduce on
  // the lab took 250 us that way). Waking a sleeping thread cost 9 us of a lone
  // allreduce's 33 on the lab, 15 us with the poll (docs/performance.md, 2026-11-27
  // 11:15 entry).
  while (now_seconds() < spin_until) {
    if (rt_.queue.ready() || controller_.has_unannounced()) {
      ring_doorbells();
      return;
    }
    if (doorbell_rang()) return;
    if (mode_ == Mode::Waiting && now_seconds() >= deadline) return;
    std::this_thread::yield();
  }
  int64_t nap_us = 1;  // see below: this rank's work waits on its peers
  while (true) {
    if (doorbell_rang()) return;
    if (rt_.rank == 0) inspect_stalls();
    // The coordinator's decisions (a stall's timeout, tuned parameters) travel with a
    // round's messages; in an idle job no rank would start that round.
    if (controller_.has_decisions()) {
      ring_doorbells();
      return;
    }
    // A request waiting long on the response cache is announced by name (see
    // fill_bits); that needs a round, which nothing else would start.
    if (stall_probe_s_ > 0 && controller_.has_cached_wait_before(now_seconds() - stall_probe_s_)) {
      ring_doorbells();
      return;
    }
    int64_t timeout_us = idle_poll_us;
    if (mode_ == Mode::Waiting) {
      double left = deadline - now_seconds();
      if (left <= 0) return;
      timeout_us = std::min<int64_t>(poll_us, static_cast<int64_t>(std::ceil(left * 1e6)));
    } else {
      // A peer's doorbell cannot wake this sleep; only the next check sees it. Just
      // after a round, peers are likely to ring soon, so check often; the longer the
      // quiet, the longer the sleep (an idle job ends up at HVD_IDLE_POLL_MS). With
      // work of its own waiting on peers, a rank checks at least every HVD_POLL_US.
      const double quiet_us = (now_seconds() - last_round_end_) * 1e6;
      timeout_us = std::clamp<int64_t>(static_cast<int64_t>(quiet_us / 4), poll_us, idle_poll_us);
      if (controller_.busy()) {
        // This rank's work is cached and waits on a peer's request, and that peer
        // rings when the request comes, often microseconds later (its application was
        // a moment behind). With naps of HVD_POLL_US from the start, such a wait took
        // 50-180 us on average on the lab, most of it after the doorbell had come;
        // naps that grow from 1 us, as wait_request's do, cost a few more wake-ups.
        timeout_us = std::min(timeout_us, nap_us);
        nap_us = std::min(nap_us * 2, poll_us);
      }
    }
    if (rt_.queue.wait(timeout_us) || controller_.has_unannounced()) {
      ring_doorbells();
      return;
    }
  }
}

Error BackgroundLoop::wait_request(MPI_Request* request) {
  int flag = 0;
  const double spin_until = now_seconds() + kWaitSpinUs * 1e-6;
  while (now_seconds() < spin_until) {
    MPI_Test(request, &flag, MPI_STATUS_IGNORE);
    if (flag) return Error::success();
  }
  int64_t nap = 1;
  while (true) {
    int rc = MPI_Test(request, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Test");
    if (flag) return Error::success();
    sleep_us(nap);
    nap = std::min<int64_t>(nap * 2, kPollUs);
  }
}

BackgroundLoop::BurstWait BackgroundLoop::let_burst_finish() {
  // A burst of requests (a backward pass's gradients, a loop of asynchronous calls) is
  // still arriving: waiting for it to end lets one round take it whole. Without the
  // wait, the pushing thread's wake-up of this thread hands this thread its core (the
  // kernel's wake-up preemption), this thread runs a round for the one tensor it
  // found, sleeps again, and the next push wakes it again: measured on the lab, a
  // 1000-tensor step split into up to 70 rounds and its pushes slowed ten-fold. So a
  // round that finds requests first naps (giving the core back) for as long as the
  // queue keeps growing, at most a cap, and not once a caller waits for one of them
  // (TensorQueue::flush: whoever waits has finished its burst). Each nap is a gap
  // longer than the last: fewer wake-ups in a long burst (a Python backward pass
  // pushes a gradient every 10-30 us for milliseconds), and the overshoot a long nap
  // would add at the burst's end is what the caller's wait cuts off. A lone request
  // for the tensor that the last round ran alone (a loop of one allreduce, a loss, a
  // metric, named or not) goes at once.
  // The cap is the cycle time where a round started then can transfer the first tensors
  // while the caller still pushes the rest, longer where it cannot (adapt/burst_cap.h):
  // measured on the lab, whose two nodes share two CPUs, a Python loop's 1000 pushes
  // took 1.5 ms, the 1 ms cap split every step in two collectives, and the first one's
  // transfers slowed the remaining pushes to 2-4 ms: 6.3-8.1 ms a step against 5.1-5.4
  // ms with a 3 ms cap.
  // The queue's lock is taken once per nap, not per push: pushes pay nothing for this.
  // A round that finds nothing queued (a peer's doorbell, the round after one that ran
  // something) takes no requests either: one pushed between this look and the drain
  // begins a burst the round has not waited for, and taking it alone split the step
  // (its first tensor in a collective of its own; seen now and then with four ranks on
  // two CPUs). It goes in the next round, which waits for the rest.
  const int64_t gap_us = rt_.params.burst_gap_us;
  if (gap_us <= 0 || cycle_time_ms_ <= 0) return {};
  size_t only_identity = 0;
  size_t seen = rt_.queue.queued(&only_identity);
  if (seen == 0) return {.take_requests = false};
  if (seen == 1 && last_lone_identity_ != 0 && only_identity == last_lone_identity_) return {};
  const double start = now_seconds();
  const double until = start + burst_cap_.cap_ms(cycle_time_ms_) * 1e-3;
  bool capped = true;
  int64_t nap_us = gap_us;
  do {
    const int64_t left_us = static_cast<int64_t>(std::ceil((until - now_seconds()) * 1e6));
    if (rt_.queue.nap_unless_flushed(std::clamp<int64_t>(nap_us, 1, std::max<int64_t>(left_us, 1)))) {
      capped = false;  // a caller waits: its burst is over
      break;
    }
    const size_t queued = rt_.queue.queued();
    if (queued <= seen) {  // only this thread drains, so the count only grows
      capped = false;
      break;
    }
    seen = queued;
    nap_us += gap_us;
  } while (now_seconds() < until);
  if (now_seconds() - start >= cycle_time_ms_ * 1e-3) burst_cap_.outlasted_cycle();
  return {.capped = capped};
}

}  // namespace hvd
