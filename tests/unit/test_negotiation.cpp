// Single-process tests of the negotiation pieces: the response cache, the agreement
// check, the wire format and the fusion planner.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>


#include "base/error.h"
#include "negotiate/agreement.h"
#include "adapt/cache_churn.h"
#include "execute/fusion_planner.h"
#include "queue/name_table.h"
#include "negotiate/response_cache.h"
#include "queue/tensor_queue.h"
#include "negotiate/wire.h"
#include "fusion/fused_cursor.h"
#include "fusion/scale.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace hvd;

namespace {

Response allreduce_response(const std::string& name, int64_t count,
                            hvd_dtype_t dtype = HVD_FLOAT32) {
  Response r;
  r.key = r.name = name;
  r.spec.op = OpType::Allreduce;
  r.spec.dtype = dtype;
  r.spec.shape = {count};
  return r;
}

// Completes every drained request's name, as the background thread does.
void release_all(TensorQueue& queue, std::vector<Request>& drained) {
  std::vector<Request*> completed;
  for (Request& r : drained) completed.push_back(&r);
  queue.release_names(completed);
}

// A call of several requests (a group) is queued whole or not at all: a name in flight,
// or one named twice in the call, refuses the call and leaves none of its names taken.
void group_push_is_all_or_nothing(void**) {
  TensorQueue queue;
  auto group = [](std::vector<std::string> names) {
    std::vector<Request> requests(names.size());
    for (size_t i = 0; i < names.size(); ++i) requests[i].name = names[i];
    return requests;
  };
  Request lone;
  lone.name = "g.2";
  assert_int_equal(queue.push(std::move(lone)).status, HVD_SUCCESS);
  assert_int_equal(queue.push(group({"g.0", "g.1", "g.2", "g.3"})).status, HVD_ERR_DUPLICATE_NAME);
  assert_int_equal(queue.push(group({"h.0", "h.1", "h.0"})).status, HVD_ERR_DUPLICATE_NAME);
  std::vector<Request> drained;
  std::vector<Refusal> refused;
  queue.drain(&drained, &refused);
  assert_int_equal(drained.size(), 1);  // the lone request only
  release_all(queue, drained);
  // Every name of the refused calls is free again: both go through now.
  assert_int_equal(queue.push(group({"g.0", "g.1", "g.2", "g.3"})).status, HVD_SUCCESS);
  assert_int_equal(queue.push(group({"h.0", "h.1"})).status, HVD_SUCCESS);
  drained.clear();
  queue.drain(&drained, &refused);
  assert_int_equal(drained.size(), 6);
  release_all(queue, drained);
}

// Churn is told once, when a whole cache's worth of evicted tensors came back; names
// that never come back (made up for every call) are not counted.
void cache_churn_counts_tensors_that_come_back(void**) {
  CacheChurn made_up(CacheChurn::kMinReturns);
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "noname." + std::to_string(i);
    assert_false(made_up.inserted(name));
    made_up.evicted(name);
  }
  assert_int_equal(made_up.returned(), 0);

  CacheChurn cycling(CacheChurn::kMinReturns);
  int told = 0;
  for (int step = 0; step < 5; ++step) {
    for (int t = 0; t < 20; ++t) {  // 20 tensors through 16 slots: each evicted in turn
      const std::string name = "grad." + std::to_string(t);
      told += cycling.inserted(name);
      cycling.evicted(name);
    }
  }
  assert_int_equal(told, 1);
  assert_true(cycling.returned() >= CacheChurn::kMinReturns);
}

void cache_evicts_least_recently_used(void**) {
  ResponseCache cache(3);
  std::string evicted;
  assert_int_equal(cache.put(allreduce_response("a", 1), &evicted), 0);
  assert_int_equal(cache.put(allreduce_response("b", 1), &evicted), 1);
  assert_int_equal(cache.put(allreduce_response("c", 1), &evicted), 2);
  assert_true(evicted.empty());
  cache.touch(cache.find("a"));  // b is now the oldest
  int slot = cache.put(allreduce_response("d", 1), &evicted);
  assert_string_equal(evicted.c_str(), "b");
  assert_int_equal(slot, 1);  // b's slot is reused
  assert_int_equal(cache.find("b"), -1);
  assert_int_equal(cache.find("d"), 1);
  assert_int_equal(cache.size(), 3);
  cache.erase(cache.find("a"));
  assert_int_equal(cache.find("a"), -1);
  assert_int_equal(cache.size(), 2);
  // Replacing a key keeps its slot.
  evicted.clear();
  assert_int_equal(cache.put(allreduce_response("d", 9), &evicted), 1);
  assert_int_equal(cache.at(1).spec.shape[0], 9);
  assert_true(evicted.empty());
}

void cache_of_capacity_zero_holds_nothing(void**) {
  ResponseCache cache(0);
  std::string evicted;
  assert_int_equal(cache.put(allreduce_response("a", 1), &evicted), -1);
  assert_int_equal(cache.find("a"), -1);
}

// Keys hashed once at enqueue are found the same as keys hashed at lookup: the queue
// sets each request's hash, the cache keeps a hash for every slot whether or not the
// response came with one.
void keys_hashed_once_match_keys_hashed_late(void**) {
  TensorQueue queue;
  Request a, b;
  a.name = b.name = "grad.0";
  b.spec.process_set = 1;
  assert_int_equal(queue.push(std::move(a)).status, HVD_SUCCESS);
  assert_int_equal(queue.push(std::move(b)).status, HVD_SUCCESS);
  std::vector<Request> drained;
  std::vector<Refusal> refused;
  queue.drain(&drained, &refused);
  assert_int_equal(drained.size(), 2);
  assert_true(drained[0].key_hash == hash_key("grad.0"));
  assert_true(drained[1].key_hash == hash_key(TensorQueue::key_of(1, "grad.0")));
  Request again;
  again.name = "grad.0";
  assert_int_equal(queue.push(std::move(again)).status, HVD_ERR_DUPLICATE_NAME);
  release_all(queue, drained);
  again.name = "grad.0";
  assert_int_equal(queue.push(std::move(again)).status, HVD_SUCCESS);
  queue.release_name("grad.0");  // no hash given: computed
  again.name = "grad.0";
  assert_int_equal(queue.push(std::move(again)).status, HVD_SUCCESS);
  // A released name's string comes back as the storage of a later name.
  Request long_name;
  long_name.name = std::string(40, 'x');
  assert_int_equal(queue.push(std::move(long_name)).status, HVD_SUCCESS);
  drained.clear();
  queue.drain(&drained, &refused);
  release_all(queue, drained);
  assert_true(drained.back().name.empty());
  Request next;
  next.name = "y";
  std::string storage;
  assert_int_equal(queue.push(std::move(next), &storage).status, HVD_SUCCESS);
  assert_true(storage.capacity() >= 40);

  // Names that differ in a few characters anywhere hash apart.
  std::vector<size_t> hashes;
  for (int i = 0; i < 1000; ++i) {
    hashes.push_back(hash_key("allreduce.module.layer" + std::to_string(i) + ".conv.weight"));
    hashes.push_back(hash_key("g" + std::to_string(i)));
  }
  hashes.push_back(hash_key(""));
  std::sort(hashes.begin(), hashes.end());
  assert_true(std::adjacent_find(hashes.begin(), hashes.end()) == hashes.end());

  ResponseCache cache(2);
  std::string evicted;
  Response late = allreduce_response("late", 1);  // key_hash 0: the cache computes it
  Response early = allreduce_response("early", 1);
  early.key_hash = hash_key("early");
  const int l = cache.put(late, &evicted), e = cache.put(early, &evicted);
  assert_true(cache.at(l).key_hash == hash_key("late"));
  assert_int_equal(cache.find("late", hash_key("late")), l);
  assert_int_equal(cache.find("early"), e);
  cache.erase(l);
  assert_int_equal(cache.find("late"), -1);
}

// The bitmaps rounds scan: occupied slots, and those outside the global set, across
// a word boundary, through eviction and erasure.
void cache_bitmaps_follow_slots(void**) {
  ResponseCache cache(70);
  std::string evicted;
  for (int i = 0; i < 70; ++i) {
    Response r = allreduce_response("t" + std::to_string(i), 1);
    r.spec.process_set = i % 3 == 0 ? 2 : 0;
    r.key = std::to_string(r.spec.process_set) + r.name;
    assert_int_equal(cache.put(r, &evicted), i);
  }
  assert_int_equal(cache.occupied_words().size(), 2);
  assert_true(cache.occupied_words()[0] == ~uint64_t{0});
  assert_true(cache.occupied_words()[1] == (uint64_t{1} << 6) - 1);
  for (int slot = 0; slot < 70; ++slot) {
    const bool other = cache.other_set_words()[slot / 64] >> (slot % 64) & 1;
    assert_int_equal(other, slot % 3 == 0);
  }
  cache.erase(66);  // set 2
  cache.erase(65);  // global set
  assert_false(cache.occupied(66));
  assert_false(cache.occupied_words()[1] >> 2 & 1);
  assert_false(cache.other_set_words()[1] >> 2 & 1);
  assert_false(cache.occupied_words()[1] >> 1 & 1);
  // Slot 66 is reused by a global-set tensor: no longer "other".
  Response g = allreduce_response("g", 1);
  g.key = "0g";
  const int slot = cache.put(g, &evicted);
  assert_true(slot == 65 || slot == 66);
  assert_true(cache.occupied(slot));
  assert_false(cache.other_set_words()[slot / 64] >> (slot % 64) & 1);
}

// Staged pieces of every size over tensors of uneven and zero sizes: each element of
// each tensor is visited once, at its place in its piece.
void fused_cursor_covers_every_element_once(void**) {
  const std::vector<int64_t> counts = {3, 0, 5, 1, 0, 4, 7};
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  for (int64_t piece = 1; piece <= total + 1; ++piece) {
    FusedCursor cursor(counts);
    std::vector<int> seen(static_cast<size_t>(total), 0);
    for (int64_t offset = 0; offset < total; offset += piece) {
      const int64_t n = std::min(piece, total - offset);
      cursor.visit(offset, n, [&](size_t k, int64_t first, int64_t count, int64_t at) {
        assert_true(count > 0);
        assert_true(first >= 0 && first + count <= counts[k]);
        assert_true(at >= 0 && at + count <= n);
        int64_t start = 0;
        for (size_t j = 0; j < k; ++j) start += counts[j];
        assert_int_equal(start + first, offset + at);  // where tensor k's element sits
        for (int64_t e = 0; e < count; ++e) ++seen[static_cast<size_t>(offset + at + e)];
      });
    }
    for (int s : seen) assert_int_equal(s, 1);
  }
}

void identical_caches_from_identical_histories(void**) {
  ResponseCache one(4), two(4);
  std::string e1, e2;
  for (int i = 0; i < 50; ++i) {
    std::string name = "t" + std::to_string((i * 7) % 9);
    int s1 = one.put(allreduce_response(name, i), &e1);
    int s2 = two.put(allreduce_response(name, i), &e2);
    assert_int_equal(s1, s2);
    assert_string_equal(e1.c_str(), e2.c_str());
  }
}

void agreement_names_ranks_that_differ(void**) {
  TensorSpec a;
  a.shape = {10};
  TensorSpec b = a;
  b.shape = {12};
  Response r = agree("w", "w", {a, a, b, a}, {0, 1, 2, 3});
  assert_int_equal(r.error.status, HVD_ERR_MISMATCH);
  const char* msg = r.error.message.c_str();
  assert_non_null(strstr(msg, "'w'"));
  assert_non_null(strstr(msg, "count"));
  assert_non_null(strstr(msg, "ranks 0, 1, 3: 10"));
  assert_non_null(strstr(msg, "rank 2: 12"));

  TensorSpec c = a;
  c.dtype = HVD_FLOAT64;
  r = agree("w", "w", {a, c}, {0, 1});
  assert_non_null(strstr(r.error.message.c_str(), "dtype"));
  assert_non_null(strstr(r.error.message.c_str(), "float64"));

  r = agree("w", "w", {a, a}, {0, 1});
  assert_true(r.error.ok());

  // Each rank reduces on its own GPU: different device ordinals agree, host memory
  // against device memory does not.
  TensorSpec gpu0 = a, gpu1 = a;
  gpu0.device = 0;
  gpu1.device = 1;
  assert_true(agree("w", "w", {gpu0, gpu1}, {0, 1}).error.ok());
  r = agree("w", "w", {gpu0, a}, {0, 1});
  assert_int_equal(r.error.status, HVD_ERR_MISMATCH);
  assert_non_null(strstr(r.error.message.c_str(), "device"));
}

// Shapes given with an allreduce or a broadcast are compared, not only their counts:
// (2, 3) against (3, 2) is a mismatch naming "shape" and each rank's shape. A rank
// that gave only a count is compared by count.
void agreement_compares_given_shapes(void**) {
  for (OpType op : {OpType::Allreduce, OpType::Broadcast}) {
    TensorSpec a;
    a.op = op;
    a.shape = {2, 3};
    a.shape_given = true;
    TensorSpec b = a;
    b.shape = {3, 2};
    Response r = agree("w", "w", {a, b, a}, {0, 1, 2});
    assert_int_equal(r.error.status, HVD_ERR_MISMATCH);
    const char* msg = r.error.message.c_str();
    assert_non_null(strstr(msg, "'w'"));
    assert_non_null(strstr(msg, "shape"));
    assert_non_null(strstr(msg, "ranks 0, 2: [2, 3]"));
    assert_non_null(strstr(msg, "rank 1: [3, 2]"));

    TensorSpec flat = a;  // 6 elements, no shape given
    flat.shape = {6};
    flat.shape_given = false;
    assert_true(agree("w", "w", {a, flat}, {0, 1}).error.ok());
    TensorSpec three_d = a;  // the same count, one more dimension
    three_d.shape = {2, 3, 1};
    r = agree("w", "w", {three_d, flat, a}, {0, 1, 2});
    assert_int_equal(r.error.status, HVD_ERR_MISMATCH);
    assert_non_null(strstr(r.error.message.c_str(), "rank 0: [2, 3, 1]; rank 2: [2, 3]"));
    TensorSpec seven = flat;
    seven.shape = {7};
    r = agree("w", "w", {a, seven}, {0, 1});
    assert_int_equal(r.error.status, HVD_ERR_MISMATCH);
    assert_non_null(strstr(r.error.message.c_str(), "count"));
  }
}

void agreement_allgather_keeps_rows_per_rank(void**) {
  TensorSpec a;
  a.op = OpType::Allgather;
  a.shape = {3, 4};
  TensorSpec b = a;
  b.shape = {5, 4};
  Response r = agree("g", "g", {a, b}, {0, 1});
  assert_true(r.error.ok());
  assert_int_equal(r.per_rank.size(), 2);
  assert_int_equal(r.per_rank[1], 5);
  assert_true(r.spec_for(1, 2) == b);
  TensorSpec c = a;
  c.shape = {3, 5};
  r = agree("g", "g", {a, c}, {0, 1});
  assert_int_equal(r.error.status, HVD_ERR_MISMATCH);
}

void wire_round_trip(void**) {
  WireMessage m;
  WireEntry e;
  e.name = std::string("name with \0 byte", 16);
  e.spec.op = OpType::Broadcast;
  e.spec.dtype = HVD_BFLOAT16;
  e.spec.root = 3;
  e.spec.shape = {1ll << 40, 2};
  e.spec.shape_given = true;
  e.spec.prescale = 0.25;
  m.entries.push_back(e);
  WireEntry t;
  t.kind = WireKind::Timeout;
  t.name = "late";
  t.text = "ranks 1 never submitted it";
  m.entries.push_back(t);
  WireEntry r;
  r.kind = WireKind::Refused;
  r.name = "grad.3";
  r.spec.op = OpType::Reducescatter;
  r.spec.process_set = 2;
  r.spec.group_size = 4;
  r.text = "recvbuf is NULL";
  m.entries.push_back(r);
  std::vector<uint8_t> bytes;
  wire_encode(m, &bytes);
  WireMessage out;
  assert_true(wire_decode(bytes.data(), bytes.size(), &out).ok());
  assert_int_equal(out.entries.size(), 3);
  assert_true(out.entries[0].name == e.name);
  assert_true(out.entries[0].spec == e.spec);
  assert_string_equal(out.entries[1].text.c_str(), t.text.c_str());
  assert_true(out.entries[2].kind == WireKind::Refused);
  assert_true(out.entries[2].spec == r.spec);
  assert_string_equal(out.entries[2].text.c_str(), r.text.c_str());
}

// A refusal comes out of the queue with the requests, under one lock; one for a name
// in flight here is dropped (the call in flight is the one the peers match), and it
// holds no name: the same name can be pushed right after it.
void refusals_drain_with_requests(void**) {
  TensorQueue queue;
  Request busy;
  busy.name = "busy";
  assert_int_equal(queue.push(std::move(busy)).status, HVD_SUCCESS);
  Refusal dropped;
  dropped.name = "busy";
  dropped.message = "bad dtype";
  queue.push_refusal(std::move(dropped));
  Refusal kept;
  kept.name = "fresh";
  kept.message = "sendbuf is NULL";
  queue.push_refusal(std::move(kept));
  Request again;
  again.name = "fresh";
  assert_int_equal(queue.push(std::move(again)).status, HVD_SUCCESS);
  assert_true(queue.ready());
  std::vector<Request> drained;
  std::vector<Refusal> refused;
  queue.drain(&drained, &refused);
  assert_int_equal(drained.size(), 2);
  assert_int_equal(refused.size(), 1);
  assert_string_equal(refused[0].name.c_str(), "fresh");
  assert_string_equal(refused[0].message.c_str(), "sendbuf is NULL");
  release_all(queue, drained);
  queue.close("closed");
  Refusal late;
  late.name = "late";
  queue.push_refusal(std::move(late));
  refused.clear();
  queue.drain(&drained, &refused);
  assert_true(refused.empty());
}

void wire_rejects_every_truncation_and_corruption(void**) {
  WireMessage m;
  for (int i = 0; i < 3; ++i) {
    WireEntry e;
    e.name = "tensor" + std::to_string(i);
    e.spec.shape = {i, 2};
    e.spec.splits = {1, 2, 3};
    m.entries.push_back(e);
  }
  std::vector<uint8_t> bytes;
  wire_encode(m, &bytes);
  WireMessage out;
  for (size_t n = 0; n < bytes.size(); ++n)
    assert_false(wire_decode(bytes.data(), n, &out).ok());
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  assert_false(wire_decode(longer.data(), longer.size(), &out).ok());
  // Flip every byte in turn: decoding either fails cleanly or yields valid enums.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0xff;
    Error err = wire_decode(bad.data(), bad.size(), &out);
    if (err.ok())
      for (const WireEntry& e : out.entries) assert_true(static_cast<int>(e.spec.op) < kNumOpTypes);
  }
}

void planner_fuses_small_same_kind_tensors(void**) {
  FusionConfig config;
  config.threshold = 900;
  config.inplace_min_bytes = 400;
  std::vector<Response> rs = {
      allreduce_response("a", 10),            // 40 B
      allreduce_response("b", 10, HVD_INT32), // other dtype: other batch
      allreduce_response("c", 50),            // 200 B
      allreduce_response("big", 200),         // 800 B >= inplace_min: alone, unfused
      allreduce_response("d", 90),            // 360 B: a + c + d = 600
      allreduce_response("e", 99),            // 396 B: would pass 900 -> new batch
  };
  std::vector<Batch> batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 4);
  assert_int_equal(batches[0].items.size(), 3);  // a, c, d
  assert_int_equal(batches[0].items[2], 4);
  assert_true(batches[0].fused);
  assert_int_equal(batches[0].bytes, 600);
  assert_int_equal(batches[1].items[0], 1);      // b
  assert_false(batches[2].fused);                // big
  assert_int_equal(batches[2].items[0], 3);
  assert_int_equal(batches[3].items[0], 5);      // e

  config.threshold = 0;  // fusion off: one batch per tensor
  assert_int_equal(plan_batches(rs, config).size(), rs.size());
}

// The memo gives the last plan back only for the same cached responses (versions) in
// the same order under the same numbers; a fresh response, another order, a new
// threshold or forget() plans again.
void plan_memo_reuses_only_the_same_cached_round(void**) {
  FusionConfig config;
  config.threshold = 900;
  config.inplace_min_bytes = 400;
  std::vector<Response> rs = {allreduce_response("a", 10), allreduce_response("b", 50),
                              allreduce_response("big", 150)};
  for (size_t i = 0; i < rs.size(); ++i) rs[i].version = 10 + i;
  PlanMemo memo;
  const std::vector<Batch>* first = &memo.plan(rs, config);
  assert_int_equal(first->size(), 2);  // a + b, big alone
  assert_int_equal(memo.plan(rs, config).size(), 2);

  // Another order: planned again (the items index the new order).
  std::swap(rs[0], rs[2]);
  const std::vector<Batch>& swapped = memo.plan(rs, config);
  assert_int_equal(swapped.size(), 2);
  assert_false(swapped[0].fused);
  assert_int_equal(swapped[0].items[0], 0);  // big, now first
  std::swap(rs[0], rs[2]);

  // A new version of one (its slot's tensor changed): planned again.
  rs[1].version = 99;
  rs[1].spec.shape = Dims{200};
  assert_int_equal(memo.plan(rs, config).size(), 3);

  // The threshold is compared: fusion off plans every tensor alone.
  config.threshold = 0;
  assert_int_equal(memo.plan(rs, config).size(), 3);
  config.threshold = 900;

  // A fresh response (version 0) is never remembered: the next round plans again.
  rs[1] = allreduce_response("b", 50);
  assert_int_equal(memo.plan(rs, config).size(), 2);
  rs[1].spec.shape = Dims{200};
  assert_int_equal(memo.plan(rs, config).size(), 3);

  // forget(): what fuse_large reads changed (here, its answer).
  rs[1].version = 11;
  rs[1].spec.shape = Dims{50};
  assert_int_equal(memo.plan(rs, config).size(), 2);
  config.fuse_large = [](int32_t) { return true; };
  assert_int_equal(memo.plan(rs, config).size(), 2);  // remembered, as documented
  memo.forget();
  assert_int_equal(memo.plan(rs, config).size(), 1);  // big joins the batch now
}

// Where the runtime says so for a set (HVD_FUSE_LARGE), large host allreduces join
// batches like small ones, up to the threshold; device tensors, Adasum and other sets
// keep theirs alone; one above the threshold stays alone, in the batches' pieces. The
// pieces are kept one size only where the runtime says that too (sets across nodes).
void planner_fuses_large_tensors_where_told(void**) {
  FusionConfig config;
  config.threshold = 2000;
  config.inplace_min_bytes = 400;
  config.fuse_large = [](int32_t set) { return set == 0; };
  config.equal_pieces = [](int32_t set) { return set == 0; };
  std::vector<Response> rs = {
      allreduce_response("big1", 200),    // 800 B
      allreduce_response("small", 10),    // 40 B
      allreduce_response("big2", 250),    // 1000 B: 1840 with the two before
      allreduce_response("big3", 200),    // would pass 2000: a new batch
      allreduce_response("gpu", 200),     // device memory: alone
      allreduce_response("adasum", 200),  // Adasum: alone
      allreduce_response("other", 200),   // set 1: alone
      allreduce_response("huge", 600),    // 2400 B, above the threshold: alone
  };
  rs[4].spec.device = 0;
  rs[5].spec.reduce_op = HVD_OP_ADASUM;
  rs[6].spec.process_set = 1;
  std::vector<Batch> batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 6);
  assert_true(batches[0].fused);
  assert_int_equal(batches[0].items.size(), 3);  // big1, small, big2
  assert_int_equal(batches[0].bytes, 1840);
  assert_true(batches[0].fuses_large);
  assert_true(batches[0].equal_pieces);  // pieces of one size
  assert_true(batches[1].fuses_large);
  assert_true(batches[1].equal_pieces);
  assert_true(batches[1].fused);
  assert_int_equal(batches[1].items[0], 3);  // big3
  for (size_t b = 2; b < 6; ++b) {
    assert_false(batches[b].fused);
    assert_int_equal(batches[b].items[0], b + 2);
    // Alone, huge still goes in pieces of one size, as the set's batches do.
    assert_int_equal(batches[b].fuses_large, b == 5);
    assert_int_equal(batches[b].equal_pieces, b == 5);
  }

  // Within one node: the same batches, their last pieces left short.
  config.equal_pieces = nullptr;
  batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 6);
  assert_int_equal(batches[0].items.size(), 3);
  for (size_t b = 0; b < 6; ++b) {
    assert_int_equal(batches[b].fuses_large, b < 2 || b == 5);
    assert_false(batches[b].equal_pieces);
  }

  config.fuse_large = [](int32_t) { return false; };  // as without the option
  batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), rs.size());
  for (size_t b = 0; b < batches.size(); ++b) {
    assert_int_equal(batches[b].fused, b == 1);  // small
    assert_false(batches[b].fuses_large);
    assert_false(batches[b].equal_pieces);
  }
}

void planner_keeps_scaling_and_sets_apart(void**) {
  FusionConfig config;
  std::vector<Response> rs = {allreduce_response("a", 4), allreduce_response("b", 4),
                              allreduce_response("c", 4), allreduce_response("d", 4)};
  rs[1].spec.prescale = 2.0;
  rs[2].spec.process_set = 1;
  rs[3].error = make_error(HVD_ERR_MISMATCH, "x");
  std::vector<Batch> batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 4);
}

Response group_member(const std::string& group, int index, int size, int64_t count) {
  Response r = allreduce_response(group + "." + std::to_string(index), count);
  r.spec.group_size = size;
  return r;
}

// A grouped allreduce is one unit: its members share one batch even when large or
// scattered through the list, and other tensors fuse around it.
void planner_fuses_a_group_as_one_unit(void**) {
  FusionConfig config;
  config.threshold = 4000;
  config.inplace_min_bytes = 400;
  std::vector<Response> rs = {
      allreduce_response("a", 10),         // 40 B
      group_member("g", 0, 3, 200),        // 800 B: above inplace_min, fused anyway
      allreduce_response("big", 200),      // 800 B, not grouped: alone
      group_member("g", 1, 3, 10),         // 40 B
      allreduce_response("b", 10),         // 40 B
      group_member("g", 2, 3, 300),        // 1200 B
  };
  std::vector<Batch> batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 2);
  assert_true(batches[0].fused);
  assert_int_equal(batches[0].items.size(), 5);  // a, g.0, g.1, g.2, b
  assert_int_equal(batches[0].items[1], 1);
  assert_int_equal(batches[0].items[2], 3);
  assert_int_equal(batches[0].items[3], 5);
  assert_int_equal(batches[0].items[4], 4);
  assert_int_equal(batches[0].bytes, 40 + 800 + 40 + 1200 + 40);
  assert_false(batches[1].fused);
  assert_int_equal(batches[1].items[0], 2);

  // A group that does not fit the open batch starts its own, whole; later small
  // tensors still go to the batch with more room left.
  config.threshold = 2050;
  batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 3);
  assert_int_equal(batches[0].items.size(), 2);  // a, b
  assert_int_equal(batches[1].items.size(), 3);  // the group
  assert_int_equal(batches[1].bytes, 2040);

  // With group fusion disabled the group fuses only with itself.
  config.threshold = 4000;
  config.disable_group_fusion = true;
  batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 3);
  assert_int_equal(batches[0].items.size(), 2);  // a, b
  assert_int_equal(batches[1].items.size(), 3);  // g.0, g.1, g.2

  // Above the threshold a group is cut into consecutive full buffers; a member larger
  // than a buffer is reduced alone, in place.
  config.threshold = 1000;
  config.disable_group_fusion = false;
  std::vector<Response> big = {group_member("h", 0, 4, 200), group_member("h", 1, 4, 50),
                               group_member("h", 2, 4, 100), group_member("h", 3, 4, 300)};
  batches = plan_batches(big, config);
  assert_int_equal(batches.size(), 3);
  assert_int_equal(batches[0].items.size(), 2);  // 800 + 200
  assert_int_equal(batches[1].items.size(), 1);  // 400
  assert_true(batches[1].fused);
  assert_false(batches[2].fused);                // 1200 > 1000: alone
}

void planner_fuses_small_reducescatters(void**) {
  FusionConfig config;
  config.threshold = 1000;
  config.inplace_min_bytes = 400;
  std::vector<Response> rs = {allreduce_response("a", 10), allreduce_response("b", 10),
                              allreduce_response("c", 200), allreduce_response("d", 10)};
  for (Response& r : rs) r.spec.op = OpType::Reducescatter;
  rs[3].spec.device = 0;  // device memory: fused with device tensors only
  std::vector<Batch> batches = plan_batches(rs, config);
  assert_int_equal(batches.size(), 3);
  assert_true(batches[0].fused);
  assert_int_equal(batches[0].items.size(), 2);  // a, b
  assert_false(batches[1].fused);                // c: 800 B, in place
  assert_true(batches[2].fused);                 // d: device, its own buffer
  assert_int_equal(batches[2].items[0], 3);
}

void scaling_copies(void**) {
  float f[3] = {1, 2, 3}, g[3];
  copy_averaged(g, f, 3, HVD_FLOAT32, 2, 3.0);
  assert_true(g[2] == 4.5f);
  int32_t i[3] = {5, -5, 7}, j[3];
  copy_averaged(j, i, 3, HVD_INT32, 2, 1.0);
  assert_int_equal(j[0], 2);
  assert_int_equal(j[1], -2);
  assert_int_equal(j[2], 3);
  copy_scaled(i, i, 3, HVD_INT32, 2.0);
  assert_int_equal(i[2], 14);
}

}  // namespace

// Names are interned: a name that comes back gets its entry back (the hints kept in it
// stay), names libhvd makes up are forgotten when released, and the table stays
// bounded however many names a job makes up.
void names_are_interned_and_bounded(void**) {
  NameTable names;
  size_t hash = 0;
  NameEntry* a = names.acquire(0, "grad.a", &hash);
  assert_non_null(a);
  assert_true(hash == hash_key("grad.a"));
  assert_null(names.acquire(0, "grad.a", &hash));  // in flight
  NameEntry* other_set = names.acquire(1, "grad.a", &hash);
  assert_non_null(other_set);
  assert_true(other_set != a);
  assert_true(hash == hash_key(TensorQueue::key_of(1, "grad.a")));
  a->cache_slot = 7;
  a->cache_version = 42;
  names.release(a);
  NameEntry* again = names.acquire(0, "grad.a", &hash);
  assert_true(again == a);
  assert_true(again->cache_version == 42);
  assert_int_equal(again->cache_slot, 7);
  names.release(TensorKeyRef("grad.a", 0));  // by key
  assert_non_null(names.acquire(0, "grad.a", &hash));

  const size_t kept = names.size();
  NameEntry* automatic = names.acquire(0, std::string("allreduce") + kAutoNameInfix + "3", &hash);
  assert_int_equal(names.size(), kept + 1);
  names.release(automatic);
  assert_int_equal(names.size(), kept);

  for (size_t i = 0; i < NameTable::kMaxKeptNames + 1000; ++i)
    names.release(names.acquire(0, "made.up." + std::to_string(i), &hash));
  assert_true(names.size() <= NameTable::kMaxKeptNames);
  // A new entry, even at a reused address, starts with no hint.
  NameEntry* fresh = names.acquire(0, "made.up.x", &hash);
  assert_true(fresh->cache_version == 0);
  assert_int_equal(fresh->cache_slot, -1);
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(cache_evicts_least_recently_used),
      cmocka_unit_test(cache_of_capacity_zero_holds_nothing),
      cmocka_unit_test(keys_hashed_once_match_keys_hashed_late),
      cmocka_unit_test(group_push_is_all_or_nothing),
      cmocka_unit_test(cache_churn_counts_tensors_that_come_back),
      cmocka_unit_test(names_are_interned_and_bounded),
      cmocka_unit_test(cache_bitmaps_follow_slots),
      cmocka_unit_test(fused_cursor_covers_every_element_once),
      cmocka_unit_test(identical_caches_from_identical_histories),
      cmocka_unit_test(agreement_names_ranks_that_differ),
      cmocka_unit_test(agreement_compares_given_shapes),
      cmocka_unit_test(agreement_allgather_keeps_rows_per_rank),
      cmocka_unit_test(wire_round_trip),
      cmocka_unit_test(refusals_drain_with_requests),
      cmocka_unit_test(wire_rejects_every_truncation_and_corruption),
      cmocka_unit_test(planner_fuses_small_same_kind_tensors),
      cmocka_unit_test(plan_memo_reuses_only_the_same_cached_round),
      cmocka_unit_test(planner_fuses_large_tensors_where_told),
      cmocka_unit_test(planner_keeps_scaling_and_sets_apart),
      cmocka_unit_test(planner_fuses_a_group_as_one_unit),
      cmocka_unit_test(planner_fuses_small_reducescatters),
      cmocka_unit_test(scaling_copies),
  };
  return cmocka_run_group_tests_name("negotiation", tests, nullptr, nullptr);
}
