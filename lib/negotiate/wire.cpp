#include "negotiate/wire.h"

#include <cstring>

#include "base/dtype.h"

namespace hvd {

namespace {

constexpr uint32_t kMagic = 0x31445648;  // "HVD1"
constexpr uint32_t kMaxEntries = 1u << 24;

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>* out) : out_(out) {}
  template <typename T>
  void put(T v) {
    size_t at = out_->size();
    out_->resize(at + sizeof(T));
    std::memcpy(out_->data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_->insert(out_->end(), s.begin(), s.end());
  }
  template <typename Vector>
  void put_vector(const Vector& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) put<int64_t>(x);
  }

 private:
  std::vector<uint8_t>* out_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  template <typename T>
  bool get(T* v) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool get_string(std::string* s, size_t max_len) {
    uint32_t n;
    if (!get(&n) || n > max_len || static_cast<size_t>(end_ - p_) < n) return false;
    s->assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  template <typename Vector>
  bool get_vector(Vector* v, size_t max_len) {
    uint32_t n;
    if (!get(&n) || n > max_len || static_cast<size_t>(end_ - p_) / sizeof(int64_t) < n)
      return false;
    v->resize(n);
    for (uint32_t i = 0; i < n; ++i) get(&(*v)[i]);
    return true;
  }
  bool at_end() const { return p_ == end_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace

void wire_encode(const WireMessage& message, std::vector<uint8_t>* out) {
  Writer w(out);
  w.put<uint32_t>(kMagic);
  w.put<uint32_t>(static_cast<uint32_t>(message.entries.size()));
  for (const WireEntry& e : message.entries) {
    w.put<uint8_t>(static_cast<uint8_t>(e.kind));
    w.put_string(e.name);
    const TensorSpec& s = e.spec;
    w.put<uint8_t>(static_cast<uint8_t>(s.op));
    w.put<uint8_t>(static_cast<uint8_t>(s.dtype));
    w.put<uint8_t>(static_cast<uint8_t>(s.reduce_op));
    w.put<int32_t>(s.root);
    w.put<int32_t>(s.device);
    w.put<int32_t>(s.process_set);
    w.put<double>(s.prescale);
    w.put<double>(s.postscale);
    w.put<int32_t>(s.group_size);
    w.put<uint8_t>(s.shape_given ? 1 : 0);
    w.put_vector(s.shape);
    w.put_vector(s.splits);
    if (e.kind == WireKind::Request) w.put<double>(e.waited);
    else w.put_string(e.text);
  }
}

Error wire_decode(const uint8_t* data, size_t size, WireMessage* out) {
  Reader r(data, size);
  uint32_t magic = 0, count = 0;
  if (!r.get(&magic) || magic != kMagic)
    return make_error(HVD_ERR_INTERNAL, "negotiation message has a bad header");
  if (!r.get(&count) || count > kMaxEntries)
    return make_error(HVD_ERR_INTERNAL, "negotiation message has a bad entry count");
  out->entries.clear();
  for (uint32_t i = 0; i < count; ++i) {
    WireEntry e;
    uint8_t kind, op, dtype, reduce_op, shape_given = 0;
    TensorSpec& s = e.spec;
    bool ok = r.get(&kind) && kind <= static_cast<uint8_t>(WireKind::Refused) &&
              r.get_string(&e.name, kMaxNameBytes) && r.get(&op) && op < kNumOpTypes &&
              r.get(&dtype) && dtype_valid(dtype) && r.get(&reduce_op) &&
              reduce_op_valid(reduce_op) && r.get(&s.root) && r.get(&s.device) &&
              r.get(&s.process_set) && r.get(&s.prescale) && r.get(&s.postscale) &&
              r.get(&s.group_size) && r.get(&shape_given) && shape_given <= 1 &&
              r.get_vector(&s.shape, HVD_MAX_NDIM) &&
              r.get_vector(&s.splits, 1u << 24);
    if (ok && kind == static_cast<uint8_t>(WireKind::Request))
      ok = r.get(&e.waited) && e.waited >= 0 && e.waited < 1e12;
    else if (ok)
      ok = r.get_string(&e.text, 1u << 20);
    if (!ok)
      return make_error(HVD_ERR_INTERNAL, "negotiation message entry %u is truncated or corrupt",
                        i);
    e.kind = static_cast<WireKind>(kind);
    s.op = static_cast<OpType>(op);
    s.dtype = static_cast<hvd_dtype_t>(dtype);
    s.reduce_op = static_cast<hvd_reduce_op_t>(reduce_op);
    s.shape_given = shape_given != 0;
    out->entries.push_back(std::move(e));
  }
  if (!r.at_end())
    return make_error(HVD_ERR_INTERNAL, "negotiation message has trailing bytes");
  return Error::success();
}

}  // namespace hvd
