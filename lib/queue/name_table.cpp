#include "queue/name_table.h"

#include "queue/request.h"
#include "queue/tensor_queue.h"

#include <algorithm>
#include <atomic>

namespace hvd {

namespace {
std::atomic<uint64_t> g_table_serials{0};

// A call repeats an entry's last push (a plain one, so process set, device, stream
// and grouping are known to match a plain call) when everything else it says is the
// same. Whatever the API would have refused cannot match what it accepted: a NaN
// scale, a negative or missing dimension, a shape whose product is not count.
bool repeats(const TensorSpec& last, const RepeatCall& call) {
  if (last.dtype != call.dtype || last.reduce_op != call.op || last.prescale != call.prescale ||
      last.postscale != call.postscale)
    return false;
  if (call.ndim == 0) return !last.shape_given && last.shape.size() == 1 && last.shape[0] == call.count;
  return last.shape_given && call.shape && last.shape.size() == static_cast<size_t>(call.ndim) &&
         std::equal(last.shape.begin(), last.shape.end(), call.shape) &&
         last.num_elements() == call.count;
}
}  // namespace

NameTable::NameTable() : serial_(g_table_serials.fetch_add(1, std::memory_order_relaxed) + 1) {}

const std::string& NameTable::key_for(int32_t process_set, const std::string& name) {
  if (process_set == 0) return name;  // the global set's keys are the names
  TensorQueue::key_into(process_set, name, &scratch_);
  return scratch_;
}

NameEntry* NameTable::acquire(int32_t process_set, const std::string& name, size_t* key_hash) {
  const std::string& key = key_for(process_set, name);
  const TensorKeyRef ref(key, 0);
  *key_hash = ref.hash;
  auto it = map_.find(ref);
  if (it != map_.end()) {
    if (it->second.in_flight) return nullptr;
    it->second.in_flight = true;
    return &it->second;
  }
  auto node = spare_nodes_.take();
  node.key().str.assign(key);  // reuses the spare node's string capacity
  node.key().hash = ref.hash;
  NameEntry& e = node.mapped();
  e = NameEntry{};
  e.in_flight = true;
  e.transient = name.find(kAutoNameInfix) != std::string::npos || map_.size() >= kMaxKeptNames;
  auto result = map_.insert(std::move(node));
  result.position->second.key = &result.position->first;
  return &result.position->second;
}

bool NameTable::in_flight(int32_t process_set, const std::string& name) {
  auto it = map_.find(TensorKeyRef(key_for(process_set, name), 0));
  return it != map_.end() && it->second.in_flight;
}

NameEntry* NameTable::acquire_repeat(std::string_view name, const RepeatCall& call,
                                     RepeatCursor* cursor) {
  NameEntry* last = cursor->table_serial == serial_ ? cursor->last : nullptr;
  NameEntry* e = last ? last->next_repeat : nullptr;
  if (!e || e->key->str != name) {
    auto it = map_.find(TensorKeyRef(name, 0));
    if (it == map_.end()) return nullptr;
    e = &it->second;
  }
  if (e->in_flight || !e->repeat_valid || !repeats(e->repeat, call)) return nullptr;
  e->in_flight = true;
  // A transient entry is forgotten at release: never linked nor kept in a cursor.
  if (e->transient) {
    cursor->last = nullptr;
    return e;
  }
  if (last) last->next_repeat = e;
  cursor->table_serial = serial_;
  cursor->last = e;
  return e;
}

void NameTable::remember(const Request& r) {
  NameEntry* e = r.name_entry;
  e->repeat_valid = plain(r.spec, r.stream, r.allocator);
  if (e->repeat_valid) e->repeat = r.spec;
}

void NameTable::release(NameEntry* entry) {
  entry->in_flight = false;
  if (entry->transient) forget(entry);
}

void NameTable::release(const TensorKeyRef& key) {
  auto it = map_.find(key);
  if (it != map_.end()) release(&it->second);
}

void NameTable::forget(NameEntry* entry) {
  auto it = map_.find(TensorKeyRef(entry->key->str, entry->key->hash));
  if (it != map_.end()) spare_nodes_.give(map_.extract(it));
}

}  // namespace hvd
