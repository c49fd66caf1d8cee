// The controller's response-cache switch-over, with several ranks simulated in one
// process: their bit vectors are ANDed and their messages concatenated as MPI would,
// so every interleaving is reproducible. Ranks submit the same tensors in different
// orders and at different rounds; the cache is switched off and on between rounds
// (the same rounds on every rank, as tuned parameters arrive). Every tensor must run
// exactly once, in the same order on every rank, and none may be left waiting.
// Also: a request that waits long on the cache is announced by name, so the stall
// inspector can name the rank that has not submitted it, once per tensor.
// Requests go through a name table as the queue's push does (queue/name_table.h), so the
// cache slot hints their names keep are used as in a job, and each rank keeps its ready
// vector from round to round as the background thread does (its elements are reused).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "negotiate/controller.h"
#include "queue/name_table.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace hvd;

namespace {

struct SimRank {
  ProcessSetTable sets;
  std::unique_ptr<Controller> controller;
  NameTable names;
  std::vector<Response> ready;
  std::vector<std::string> executed;  // keys, in execution order
  std::vector<TensorSpec> executed_specs;  // the responses' specs, alike
};

class Simulation {
 public:
  Simulation(int ranks, size_t capacity) : ranks_(static_cast<size_t>(ranks)) {
    for (int r = 0; r < ranks; ++r) {
      auto set = std::make_shared<ProcessSet>();
      set->id = 0;
      for (int w = 0; w < ranks; ++w) {
        set->ranks.push_back(w);
        set->set_rank_of.push_back(w);
      }
      set->my_set_rank = r;
      SimRank& sim = ranks_[static_cast<size_t>(r)];
      sim.sets.add(set);
      sim.controller = std::make_unique<Controller>(r, ranks, capacity, &sim.sets);
    }
  }

  Controller& at(int r) { return *ranks_[static_cast<size_t>(r)].controller; }
  const std::vector<std::string>& executed(int r) const {
    return ranks_[static_cast<size_t>(r)].executed;
  }
  const std::vector<TensorSpec>& executed_specs(int r) const {
    return ranks_[static_cast<size_t>(r)].executed_specs;
  }

  void submit(int r, const std::string& name, int64_t count, OpType op = OpType::Allreduce) {
    Request req;
    req.name = name;
    req.spec.op = op;
    req.spec.root = op == OpType::Broadcast ? 0 : -1;
    req.spec.shape = {count};
    req.name_entry = ranks_[static_cast<size_t>(r)].names.acquire(0, name, &req.key_hash);
    assert_non_null(req.name_entry);  // not in flight already
    std::vector<Request> v;
    v.push_back(std::move(req));
    at(r).intake(std::move(v));
  }

  // One negotiation round on every rank; returns whether any rank is still busy.
  // Requests waiting on the cache since before stale_before are announced by name.
  bool round(double stale_before = -1.0) {
    const size_t words = at(0).bit_words();
    std::vector<uint64_t> all(words, ~uint64_t{0});
    std::vector<uint64_t> mine(words);
    for (size_t r = 0; r < ranks_.size(); ++r) {
      assert_int_equal(ranks_[r].controller->bit_words(), words);  // lengths agree
      ranks_[r].controller->fill_bits(mine.data(), false, stale_before);
      for (size_t w = 0; w < words; ++w) all[w] &= mine[w];
    }
    RoundFlags flags{};
    for (auto& rank : ranks_) flags = rank.controller->apply_bits(all.data());
    if (flags.any_announcements) {
      std::vector<uint8_t> data;
      std::vector<int> counts, displs;
      for (auto& rank : ranks_) {
        std::vector<uint8_t> message;
        rank.controller->encode_message(&message);
        displs.push_back(static_cast<int>(data.size()));
        counts.push_back(static_cast<int>(message.size()));
        data.insert(data.end(), message.begin(), message.end());
      }
      for (auto& rank : ranks_)
        assert_true(rank.controller->apply_messages(data, counts, displs).ok());
    }
    for (auto& rank : ranks_) {
      std::vector<Response>& ready = rank.ready;
      size_t n = rank.controller->take_ready(&ready);
      // As the executor takes them: cached ones where they waited, announced ones
      // moved out (alternate rounds take every one by moving, as speculation does).
      std::vector<Request> announced, moved(n);
      announced.reserve(n);
      const bool in_place = ++rounds_ % 2 == 0;
      for (size_t i = 0; i < n; ++i) {
        assert_true(ready[i].error.ok());
        Request* taken = in_place ? rank.controller->take_local_in_place(ready[i], &announced)
                                  : (rank.controller->take_local(ready[i], &moved[i]) ? &moved[i]
                                                                                      : nullptr);
        assert_non_null(taken);  // it was pending
        const Request& local = *taken;
        assert_string_equal(local.name.c_str(), ready[i].name.c_str());  // and is this one
        assert_true(local.spec.shape == ready[i].spec.shape);
        rank.names.release(local.name_entry);
        rank.executed.push_back(ready[i].key);
        rank.executed_specs.push_back(ready[i].spec);
      }
    }
    bool busy = false;
    for (auto& rank : ranks_) busy = busy || rank.controller->busy();
    return busy;
  }

  size_t switch_cache(bool on) {
    size_t sent_back = 0;
    for (auto& rank : ranks_) sent_back += rank.controller->set_cache_enabled(on);
    return sent_back;
  }

 private:
  std::vector<SimRank> ranks_;
  int rounds_ = 0;
};

uint32_t next(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

// A cached tensor waiting on one rank goes back to announcements when the cache goes
// off, and runs once the other rank submits it.
void waiting_on_a_slot_goes_back_to_announcements(void**) {
  Simulation sim(2, 64);
  for (int r = 0; r < 2; ++r) sim.submit(r, "w", 10);
  while (sim.round()) {
  }
  assert_int_equal(sim.executed(0).size(), 1);
  assert_int_equal(sim.at(0).cache().size(), 1);
  assert_int_equal(sim.at(0).bit_words(), 4);  // three regions of one word, and the flags

  sim.submit(0, "w", 10);  // cached on rank 0; rank 1 has not submitted it yet
  assert_false(sim.at(0).has_unannounced());
  sim.round();
  assert_int_equal(sim.executed(0).size(), 1);

  assert_int_equal(sim.switch_cache(false), 1);
  assert_false(sim.at(0).cache_enabled());
  assert_int_equal(sim.at(0).bit_words(), 1);  // the flag word alone
  assert_int_equal(sim.at(0).cache().capacity(), 0);
  assert_true(sim.at(0).has_unannounced());
  sim.submit(1, "w", 10);
  for (int i = 0; i < 5 && sim.round(); ++i) {
  }
  assert_false(sim.at(0).busy());
  assert_false(sim.at(1).busy());
  assert_int_equal(sim.executed(0).size(), 2);
  assert_int_equal(sim.executed(1).size(), 2);

  // Off, nothing is cached; on again, the cache starts empty and fills.
  assert_int_equal(sim.at(0).cache().size(), 0);
  assert_int_equal(sim.switch_cache(true), 0);
  assert_int_equal(sim.at(1).bit_words(), 4);
  for (int r = 0; r < 2; ++r) sim.submit(r, "w", 10);
  while (sim.round()) {
  }
  assert_int_equal(sim.at(0).cache().size(), 1);
  assert_int_equal(sim.switch_cache(true), 0);  // already on: nothing happens
  assert_int_equal(sim.at(0).cache().size(), 1);
}

// A controller built without a cache cannot turn one on.
void no_capacity_means_no_cache(void**) {
  Simulation sim(2, 0);
  assert_false(sim.at(0).cache_enabled());
  assert_int_equal(sim.switch_cache(true), 0);
  assert_false(sim.at(0).cache_enabled());
  assert_int_equal(sim.at(0).bit_words(), 1);
}

// Many steps, ranks submitting in their own orders at their own rounds, the cache
// switched every few rounds, a small cache so that evictions mix in.
void random_interleavings_with_switches(void**) {
  for (size_t capacity : {size_t{4}, size_t{1024}}) {
    for (int ranks : {2, 3}) {
      size_t sent_back_all = 0;
      for (uint32_t seed = 1; seed <= 20; ++seed) {
        Simulation sim(ranks, capacity);
        uint32_t state = seed;
        const int tensors = 12, steps = 15;
        size_t sent_back = 0, switches = 0, rounds = 0;
        for (int step = 0; step < steps; ++step) {
          // Each rank's own order of this step's tensors.
          std::vector<std::vector<int>> order(static_cast<size_t>(ranks));
          for (auto& o : order) {
            for (int t = 0; t < tensors; ++t) o.push_back(t);
            for (int i = tensors - 1; i > 0; --i)
              std::swap(o[static_cast<size_t>(i)], o[next(&state) % (static_cast<uint32_t>(i) + 1)]);
          }
          std::vector<size_t> submitted(static_cast<size_t>(ranks), 0);
          bool all_in = false;
          while (true) {
            // Each rank submits 0-3 more of its tensors before the round.
            all_in = true;
            for (int r = 0; r < ranks; ++r) {
              size_t& k = submitted[static_cast<size_t>(r)];
              for (uint32_t n = next(&state) % 4; n > 0 && k < order[static_cast<size_t>(r)].size(); --n) {
                int t = order[static_cast<size_t>(r)][k++];
                // Tensor 5's size changes with the step: its cached spec goes stale.
                sim.submit(r, "t" + std::to_string(t), t == 5 ? 1 + step % 3 : 10 + t);
              }
              all_in = all_in && k == order[static_cast<size_t>(r)].size();
            }
            bool busy = sim.round();
            ++rounds;
            if (next(&state) % 3 == 0) {
              sent_back += sim.switch_cache(next(&state) % 2 == 0);
              ++switches;
            }
            if (all_in && !busy) break;
            if (rounds > 100000) fail_msg("no progress (seed %u)", seed);
          }
        }
        const size_t want = static_cast<size_t>(tensors) * steps;
        for (int r = 0; r < ranks; ++r) {
          assert_int_equal(sim.executed(r).size(), want);
          assert_true(sim.executed(r) == sim.executed(0));  // the same order everywhere
        }
        if (seed == 1)
          std::printf("capacity %zu, %d ranks: %zu rounds, %zu switch calls, %zu requests sent "
                      "back to announcements\n",
                      capacity, ranks, rounds, switches, sent_back);
        sent_back_all += sent_back;
      }
      assert_true(sent_back_all > 0);  // the fall-back path did run
    }
  }
}

}  // namespace

void run_until_idle(Simulation& sim) {
  for (int i = 0; i < 20 && sim.round(); ++i) {
  }
}

// A name's cache slot hint outlives the slot: once another tensor (of the same spec)
// holds the slot, the name is looked up again (and announced), never run as the slot's
// tensor.
void a_stale_slot_hint_is_not_used(void**) {
  Simulation sim(2, 1);
  for (const char* name : {"a", "a", "b", "a"}) {  // a cached, a from its slot, b evicts a
    for (int r = 0; r < 2; ++r) sim.submit(r, name, 4);
    run_until_idle(sim);
  }
  const std::vector<std::string> want = {"a", "a", "b", "a"};
  for (int r = 0; r < 2; ++r) assert_true(sim.executed(r) == want);
}

// A request waiting on a slot whose tensor is evicted (other tensors were negotiated
// meanwhile) is announced by name and runs once, when the other rank submits it.
void eviction_sends_a_waiting_request_to_announcements(void**) {
  Simulation sim(2, 2);
  for (int r = 0; r < 2; ++r) sim.submit(r, "a", 4);
  run_until_idle(sim);
  sim.submit(0, "a", 4);  // waits on a's slot: rank 1 has not submitted it
  sim.round();
  for (int r = 0; r < 2; ++r) {
    sim.submit(r, "b", 8);
    sim.submit(r, "c", 8);  // with b, fills the cache: a is evicted
  }
  run_until_idle(sim);
  assert_true(sim.at(0).busy());  // a still waits, now by name
  sim.submit(1, "a", 4);
  run_until_idle(sim);
  assert_false(sim.at(0).busy());
  for (int r = 0; r < 2; ++r) {
    assert_int_equal(std::count(sim.executed(r).begin(), sim.executed(r).end(), "a"), 2);
    assert_true(sim.executed(r) == sim.executed(0));
  }
}

// A ready response reuses the element of an earlier round; when that element was a copy
// of the same slot's earlier response (the tensor's spec changed since), it is copied
// again, not taken as it is.
void a_changed_cached_spec_is_copied_again(void**) {
  Simulation sim(2, 8);
  for (int64_t count : {4, 4, 4, 6, 6}) {  // 6: the cached spec is dropped and agreed anew
    for (int r = 0; r < 2; ++r) sim.submit(r, "a", count);
    run_until_idle(sim);
  }
  for (int r = 0; r < 2; ++r) {
    const std::vector<TensorSpec>& specs = sim.executed_specs(r);
    assert_int_equal(specs.size(), 5);
    for (size_t i = 0; i < specs.size(); ++i) assert_int_equal(specs[i].shape[0], i < 3 ? 4 : 6);
  }
}

// Tensors every rank ran before; ranks 0 and 1 submit them again, rank 2 does not.
void stall_on_cached_tensors_names_the_missing_rank(size_t capacity) {
  Simulation sim(3, capacity);
  for (int step = 0; step < 4; ++step) {  // several steps: keys come back to the table
    for (int r = 0; r < 3; ++r) {
      sim.submit(r, "grad.a", 4);
      sim.submit(r, "grad.b", 8);
    }
    run_until_idle(sim);
  }
  for (int r = 0; r < 2; ++r) {
    sim.submit(r, "grad.a", 4);
    sim.submit(r, "grad.b", 8);
  }
  for (int i = 0; i < 3; ++i) sim.round();
  const double later = now_seconds() + 1000;
  if (capacity > 0) {
    // Waiting on the cache: the AND of ready bits cannot say who is missing.
    assert_int_equal(sim.at(0).stalled(later).size(), 0);
    assert_true(sim.at(0).has_cached_wait_before(later));
    sim.round(later);  // the waits count as long: the slots are dropped and announced
    sim.round();
    assert_false(sim.at(0).has_cached_wait_before(later));
  }
  std::vector<Controller::Stalled> stalled = sim.at(0).stalled(later);
  assert_int_equal(stalled.size(), 2);  // once per tensor, however often it was announced
  for (const auto& s : stalled) {
    assert_int_equal(s.missing_ranks.size(), 1);
    assert_int_equal(s.missing_ranks[0], 2);
  }
  // Rank 2 submits after all: both run everywhere, and are cached again.
  sim.submit(2, "grad.a", 4);
  sim.submit(2, "grad.b", 8);
  run_until_idle(sim);
  for (int r = 0; r < 3; ++r) assert_int_equal(sim.executed(r).size(), 10);
  assert_int_equal(sim.at(0).stalled(later).size(), 0);
}

void cached_stall_is_seen(void**) { stall_on_cached_tensors_names_the_missing_rank(64); }
void uncached_stall_is_seen_once(void**) { stall_on_cached_tensors_names_the_missing_rank(0); }

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(cached_stall_is_seen),
      cmocka_unit_test(uncached_stall_is_seen_once),
      cmocka_unit_test(waiting_on_a_slot_goes_back_to_announcements),
      cmocka_unit_test(no_capacity_means_no_cache),
      cmocka_unit_test(random_interleavings_with_switches),
      cmocka_unit_test(a_stale_slot_hint_is_not_used),
      cmocka_unit_test(eviction_sends_a_waiting_request_to_announcements),
      cmocka_unit_test(a_changed_cached_spec_is_copied_again),
  };
  return cmocka_run_group_tests_name("cache_switch", tests, nullptr, nullptr);
}
