#include "api/validate.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "base/utf8.h"
#include "runtime/enqueue.h"
#include "negotiate/wire.h"
#include "ops/device/device_runtime.h"
#include "hvd_build_config.h"

namespace hvd {

Error require_runtime(const char* function, std::shared_ptr<Runtime>* rt) {
  *rt = current_runtime();
  if (!*rt && in_forked_child()) return forked_child_error(function);
  if (!*rt)
    return make_error(HVD_ERR_NOT_INITIALIZED,
                      "%s called before hvd_init (or after hvd_shutdown): call hvd_init first",
                      function);
  return Error::success();
}

hvd_status_t as_blocking_call(hvd_status_t status, const char* function) {
  if (status != HVD_ERR_NOT_INITIALIZED) return status;
  std::shared_ptr<Runtime> rt;
  Error err = require_runtime(function, &rt);
  // A runtime made meanwhile by another thread: the _async form's report stands.
  return err.ok() ? status : finish(err);
}

// The shape fields were carved from the reserved bytes: programs built against the
// older header pass the same size, with zeros (no shape) where the fields now are.
static_assert(sizeof(void*) != 8 || sizeof(hvd_op_options_t) == 120,
              "hvd_op_options_t must keep its size (ABI)");
static_assert(offsetof(hvd_op_options_t, shape) ==
                  offsetof(hvd_op_options_t, allocator_user_data) + sizeof(void*),
              "the shape fields follow allocator_user_data");

namespace {

// Members of a refused group announced one by one (RefusalNotice).
constexpr int kMaxRefusedMembers = 1 << 16;

Error read_options_shape(const OptionsShape& shape) {
  if (shape.ndim < 0 || shape.ndim > HVD_MAX_NDIM)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "options->ndim is %d; it must be 0 (no shape given) to %d", shape.ndim,
                      HVD_MAX_NDIM);
  if (shape.ndim > 0 && !shape.dims)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "options->shape is NULL but options->ndim is %d; pass the %d dimensions "
                      "or set ndim to 0",
                      shape.ndim, shape.ndim);
  for (int i = 0; i < shape.ndim; ++i)
    if (shape.dims[i] < 0)
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "options->shape[%d] is %lld; dimensions must be >= 0", i,
                        static_cast<long long>(shape.dims[i]));
  return Error::success();
}

std::string dims_text(const int64_t* dims, int ndim) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

Error check_options_shape(const OptionsShape& shape, int64_t count) {
  if (shape.ndim == 0) return Error::success();
  // Overflow-safe product: stop once it passes count.
  int64_t product = 1;
  bool over = false;
  for (int i = 0; i < shape.ndim; ++i) {
    const int64_t d = shape.dims[i];
    if (d == 0) {
      product = 0;
      over = false;
      break;
    }
    if (!over && product > count / d) over = true;
    if (!over) product *= d;
  }
  if (over || product != count)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "options->shape %s has %s elements but count is %lld; they must agree",
                      dims_text(shape.dims, shape.ndim).c_str(),
                      over ? "more" : std::to_string(product).c_str(),
                      static_cast<long long>(count));
  return Error::success();
}

void set_counted_shape(const OptionsShape& shape, int64_t count, TensorSpec* spec) {
  if (shape.ndim > 0) {
    spec->shape.assign(shape.dims, shape.dims + shape.ndim);
    spec->shape_given = true;
  } else {
    spec->shape = {count};
    spec->shape_given = false;
  }
}

Error read_options(const hvd_op_options_t* options, OpOptions* out) {
  *out = OpOptions{};
  if (!options) return Error::success();
  const size_t size = options->struct_size;
  if (size < offsetof(hvd_op_options_t, device))
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "options->struct_size is %zu: initialize the options with "
                      "hvd_op_options_init() or HVD_OP_OPTIONS_INITIALIZER",
                      size);
  auto has = [size](size_t offset, size_t field) { return size >= offset + field; };
  out->prescale = options->prescale_factor;
  out->postscale = options->postscale_factor;
  if (has(offsetof(hvd_op_options_t, device), sizeof(int32_t))) out->device = options->device;
  if (has(offsetof(hvd_op_options_t, process_set_id), sizeof(int32_t)))
    out->process_set = options->process_set_id;
  if (has(offsetof(hvd_op_options_t, stream), sizeof(void*))) out->stream = options->stream;
  if (has(offsetof(hvd_op_options_t, allocator), sizeof(void*))) out->allocator = options->allocator;
  if (has(offsetof(hvd_op_options_t, allocator_user_data), sizeof(void*)))
    out->allocator_data = options->allocator_user_data;
  if (has(offsetof(hvd_op_options_t, shape), sizeof(void*)) &&
      has(offsetof(hvd_op_options_t, ndim), sizeof(int32_t))) {
    out->shape.dims = options->shape;
    out->shape.ndim = options->ndim;
    Error err = read_options_shape(out->shape);
    if (!err.ok()) return err;
  }
  if (!std::isfinite(out->prescale) || !std::isfinite(out->postscale))
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "prescale_factor (%g) and postscale_factor (%g) must be finite numbers",
                      out->prescale, out->postscale);
  return check_device(out->device);
}

Error check_dtype(hvd_dtype_t dtype) {
  if (!dtype_valid(dtype))
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "dtype %d is not an hvd_dtype_t (HVD_UINT8 = 0 ... HVD_BOOL = %d)",
                      static_cast<int>(dtype), HVD_BOOL);
  return Error::success();
}

Error check_reduce_op(hvd_reduce_op_t op) {
  if (!reduce_op_valid(op))
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "reduce op %d is not an hvd_reduce_op_t (HVD_OP_AVERAGE = 0 ... "
                      "HVD_OP_PRODUCT = %d)",
                      static_cast<int>(op), HVD_OP_PRODUCT);
  return Error::success();
}

Error check_buffer(const void* buffer, int64_t bytes, const char* what) {
  if (!buffer && bytes > 0)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s is NULL but the tensor has %lld bytes", what,
                      static_cast<long long>(bytes));
  return Error::success();
}

Error check_count(int64_t count, hvd_dtype_t dtype) {
  if (count < 0)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "count is %lld; it must be 0 or more",
                      static_cast<long long>(count));
  if (count > INT64_MAX / 8 / static_cast<int64_t>(dtype_size(dtype)))
    return make_error(HVD_ERR_INVALID_ARGUMENT, "count %lld is too large to address",
                      static_cast<long long>(count));
  return Error::success();
}

Error check_placement(const void* buffer, int32_t device, const std::string& name, const char* what) {
  if (device == HVD_DEVICE_CPU || !buffer) return Error::success();
  std::string text = "tensor '" + name + "' " + what;
  return check_pointer(buffer, device, text.c_str());
}

Error check_shape(int ndim, const int64_t* shape, hvd_dtype_t dtype, bool scalar_ok) {
  if (ndim == 0 && scalar_ok) return Error::success();
  if (ndim < 1 || ndim > HVD_MAX_NDIM)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "ndim is %d; it must be 1 to %d", ndim,
                      HVD_MAX_NDIM);
  if (!shape) return make_error(HVD_ERR_INVALID_ARGUMENT, "shape is NULL");
  int64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0)
      return make_error(HVD_ERR_INVALID_ARGUMENT, "shape[%d] is %lld; dimensions must be >= 0", i,
                        static_cast<long long>(shape[i]));
    if (shape[i] > 0 && total > INT64_MAX / 16 / shape[i])
      return make_error(HVD_ERR_INVALID_ARGUMENT, "the shape has too many elements to address");
    total *= shape[i];
  }
  return check_count(total, dtype);
}

Error check_handle_out(const hvd_handle_t* handle) {
  if (!handle) return make_error(HVD_ERR_INVALID_ARGUMENT, "handle (the output pointer) is NULL");
  return Error::success();
}

Error check_process_set(Runtime& rt, int32_t id, std::shared_ptr<ProcessSet>* set) {
  *set = rt.sets.find(id);
  if (!*set)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "process set %d does not exist (see hvd_add_process_set)", id);
  if (!(*set)->member())
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "this rank (%d) is not a member of process set %d; only its members may "
                      "run operations on it",
                      rt.rank, id);
  return Error::success();
}

Error check_device(int32_t device) {
  if (device == HVD_DEVICE_CPU) return Error::success();
  if (device < 0)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "device is %d; use HVD_DEVICE_CPU (-1) or a CUDA device ordinal", device);
  if (!HVD_HAVE_CUDA)
    return make_error(HVD_ERR_UNSUPPORTED,
                      "device %d requested, but this libhvd was built without CUDA", device);
  return Error::success();
}

Error check_root(int root_rank, const ProcessSet& set) {
  const bool member = root_rank >= 0 && root_rank < static_cast<int>(set.set_rank_of.size()) &&
                      set.set_rank_of[static_cast<size_t>(root_rank)] >= 0;
  if (member) return Error::success();
  // Runs of consecutive ranks are written "a..b", so a large set stays one line.
  std::string ranks;
  for (size_t i = 0; i < set.ranks.size();) {
    size_t j = i;
    while (j + 1 < set.ranks.size() && set.ranks[j + 1] == set.ranks[j] + 1) ++j;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(set.ranks[i]);
    if (j > i) ranks += (j == i + 1 ? ", " : "..") + std::to_string(set.ranks[j]);
    i = j + 1;
  }
  return make_error(HVD_ERR_INVALID_ARGUMENT,
                    "root_rank %d is not a rank of process set %d (its ranks: [%s]); root_rank "
                    "is a global rank, and must be one of the set's",
                    root_rank, set.id, ranks.c_str());
}

// The process set a call names, read before the options are validated so that the
// automatic name is taken even when the call is then refused.
static int32_t named_process_set(const hvd_op_options_t* options) {
  if (!options || options->struct_size < offsetof(hvd_op_options_t, process_set_id) +
                                             sizeof(int32_t))
    return HVD_GLOBAL_PROCESS_SET;
  return options->process_set_id;
}

Error resolve_name(Runtime& rt, const char* name, const char* op, int32_t process_set,
                   std::string* out) {
  if (!name) {
    *out = auto_name(rt, op, process_set);
    return Error::success();
  }
  size_t len = strnlen(name, kMaxNameBytes + 1);
  if (len > kMaxNameBytes)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "tensor name is longer than %zu bytes",
                      kMaxNameBytes);
  *out = take_name_storage();  // steady state: a released name's memory, reused
  out->assign(name, len);
  return Error::success();
}

Error begin(const Call& call, const hvd_op_options_t* options, std::shared_ptr<Runtime>* rt,
            OpOptions* opts, std::shared_ptr<ProcessSet>* set, std::string* resolved) {
  HVD_RETURN_IF_ERROR(require_runtime(call.function, rt));
  HVD_RETURN_IF_ERROR(resolve_name(**rt, call.name, call.op, named_process_set(options), resolved));
  HVD_RETURN_IF_ERROR(read_options(options, opts));
  return check_process_set(**rt, opts->process_set, set);
}

Error check_name_text(const std::string& name) {
  const size_t bad = utf8_invalid_offset(name);
  if (bad == std::string_view::npos) return Error::success();
  return make_error(HVD_ERR_INVALID_ARGUMENT,
                    "tensor name is not valid UTF-8: byte 0x%02x at offset %zu; names are text, "
                    "the same on every rank (the other ranks are told of this call under the "
                    "name with U+FFFD for each bad byte)",
                    static_cast<unsigned char>(name[bad]), bad);
}

Error check_group(int ntensors, std::initializer_list<ArrayArgument> arrays, const char* op) {
  if (ntensors <= 0)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "ntensors is %d; a group needs at least one tensor",
                      ntensors);
  for (const ArrayArgument& a : arrays)
    if (!a.pointer) return make_error(HVD_ERR_INVALID_ARGUMENT, "%s: %s must not be NULL", op, a.name);
  return Error::success();
}

Error check_outputs_apart(int ntensors, void* const* recvbufs, const int64_t* counts,
                          hvd_dtype_t dtype, const char* harm) {
  struct Range {
    uintptr_t begin, end;
    int member;
  };
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  std::vector<Range> ranges;
  ranges.reserve(static_cast<size_t>(ntensors));
  for (int i = 0; i < ntensors; ++i) {
    if (!recvbufs[i] || counts[i] <= 0 || counts[i] > INT64_MAX / esize) continue;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(recvbufs[i]);
    ranges.push_back({begin, begin + static_cast<uintptr_t>(counts[i] * esize), i});
  }
  // A step's tensors usually come in address order, or its reverse: sorting is then
  // skipped (a thousand members cost 20-30 us to sort).
  auto ascending = [](const Range& a, const Range& b) { return a.begin < b.begin; };
  if (std::is_sorted(ranges.rbegin(), ranges.rend(), ascending))
    std::reverse(ranges.begin(), ranges.end());
  else if (!std::is_sorted(ranges.begin(), ranges.end(), ascending))
    std::sort(ranges.begin(), ranges.end(), ascending);
  for (size_t k = 1; k < ranges.size(); ++k) {
    const Range& before = ranges[k - 1];
    const Range& after = ranges[k];
    if (after.begin < before.end)
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "tensors %d and %d of the group write overlapping memory (one buffer "
                        "given twice, or overlapping views): %s",
                        std::min(before.member, after.member),
                        std::max(before.member, after.member), harm);
  }
  return Error::success();
}

std::string group_member_name(const std::string& base, int i) { return base + "." + std::to_string(i); }

Request make_request(std::string name, const OpOptions& opts, OpType op, hvd_dtype_t dtype) {
  Request r;
  fill_request(&r, std::move(name), opts, op, dtype);
  return r;
}

void fill_request(Request* r, std::string name, const OpOptions& opts, OpType op,
                  hvd_dtype_t dtype) {
  r->name = std::move(name);
  fill_spec(&r->spec, opts, op, dtype);
  r->stream = opts.stream;
  r->allocator = opts.allocator;
  r->allocator_data = opts.allocator_data;
}

void fill_spec(TensorSpec* spec, const OpOptions& opts, OpType op, hvd_dtype_t dtype) {
  spec->op = op;
  spec->dtype = dtype;
  spec->device = opts.device;
  spec->process_set = opts.process_set;
  spec->prescale = opts.prescale;
  spec->postscale = opts.postscale;
}

RefusalNotice::~RefusalNotice() {
  if (accepted_) return;
  try {
    // A group's count may be the very argument refused: where it is no count a rank
    // could have queued, only the first member is named (its failure fails the
    // group's others on every rank).
    const bool counted = group_size_ >= 1 && group_size_ <= kMaxRefusedMembers;
    const int members = grouped_ && counted ? group_size_ : 1;
    const std::string why = std::uncaught_exceptions() > exceptions_
                                ? std::string("it failed with an exception (out of memory or an internal error)")
                                : std::string(reason_ ? reason_ : last_error());
    for (int i = 0; i < members; ++i) {
      Refusal r;
      const std::string text = utf8_replace_invalid(name_);
      r.name = grouped_ ? group_member_name(text, i) : text;
      r.op = op_;
      r.process_set = process_set_;
      r.group_size = grouped_ ? members : 0;
      r.message = why;
      rt_.queue.push_refusal(std::move(r));
    }
  } catch (...) {
    // Out of memory while refusing: the peers' stall inspector names this rank.
  }
}

hvd_status_t finish(const Error& error) {
  if (error.ok()) return HVD_SUCCESS;
  return fail(error);
}

}  // namespace hvd
