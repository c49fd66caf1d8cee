#include "negotiate/agreement.h"

#include <functional>
#include <map>

#include "base/dtype.h"
#include "base/tensor_key.h"
#include "ops/adasum/adasum_math.h"

namespace hvd {

namespace {

std::string shape_text(const Dims& shape, size_t from) {
  std::string s = "[";
  for (size_t i = from; i < shape.size(); ++i) {
    if (i > from) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string double_text(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

struct Field {
  const char* what;
  std::function<std::string(const TensorSpec&)> describe;
  // Ranks whose spec this returns false for take no part in the comparison.
  bool (*applies)(const TensorSpec&) = nullptr;
};

// Groups ranks by the value they announced: "rank 0: 10; ranks 1, 2: 12".
std::string group_ranks(const std::vector<std::string>& values, const std::vector<int>& ranks) {
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> order;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!groups.count(values[i])) order.push_back(values[i]);
    groups[values[i]].push_back(ranks[i]);
  }
  std::string out;
  for (const std::string& value : order) {
    const std::vector<int>& rs = groups[value];
    if (!out.empty()) out += "; ";
    out += rs.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < rs.size(); ++i) {
      if (i > 0) out += ", ";
      if (i == 8 && rs.size() > 10) {
        out += "... (" + std::to_string(rs.size()) + " ranks)";
        break;
      }
      out += std::to_string(rs[i]);
    }
    out += ": " + value;
  }
  return out;
}

}  // namespace

Error reduction_error(const std::string& name, const TensorSpec& spec, int set_size) {
  if (spec.reduce_op == HVD_OP_ADASUM) {
    if (spec.op != OpType::Allreduce)
      return make_error(HVD_ERR_UNSUPPORTED,
                        "tensor '%s': HVD_OP_ADASUM is defined for allreduce only; use "
                        "HVD_OP_SUM or HVD_OP_AVERAGE for %s",
                        name.c_str(), op_type_name(spec.op));
    if (!adasum_supports(spec.dtype))
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "tensor '%s': HVD_OP_ADASUM needs a floating-point dtype (HVD_FLOAT16, "
                        "HVD_BFLOAT16, HVD_FLOAT32 or HVD_FLOAT64); got HVD_%s",
                        name.c_str(), dtype_upper_name(spec.dtype).c_str());
    // Device tensors combine across nodes with NCCL, where the number of nodes
    // counts instead: the device engine decides (DeviceAdasum::check).
    if (spec.device == HVD_DEVICE_CPU && (set_size & (set_size - 1)))
      return make_error(HVD_ERR_UNSUPPORTED,
                        "tensor '%s': HVD_OP_ADASUM combines ranks pairwise and needs a "
                        "power-of-two number of ranks in the process set; this one has %d. "
                        "Run on 1, 2, 4, 8... ranks, or use HVD_OP_AVERAGE",
                        name.c_str(), set_size);
  }
  if (spec.dtype == HVD_BOOL && spec.reduce_op == HVD_OP_AVERAGE)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "tensor '%s': HVD_OP_AVERAGE is not defined for HVD_BOOL; use SUM (logical "
                      "or) or MIN (logical and)",
                      name.c_str());
  if (spec.dtype == HVD_BOOL && (spec.prescale != 1.0 || spec.postscale != 1.0))
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "tensor '%s': prescale/postscale factors cannot be applied to HVD_BOOL "
                      "tensors",
                      name.c_str());
  return Error::success();
}

Response agree(const std::string& key, const std::string& name,
               const std::vector<TensorSpec>& specs, const std::vector<int>& world_ranks,
               int set_size) {
  Response response;
  response.key = key;
  response.key_hash = hash_key(key);
  response.name = name;
  response.spec = specs[0];
  const OpType op = specs[0].op;
  const bool rows_differ = op == OpType::Allgather || op == OpType::Alltoall;

  const bool counted = op == OpType::Allreduce || op == OpType::Broadcast;
  std::vector<Field> fields = {
      {"operation", [](const TensorSpec& s) { return std::string(op_type_name(s.op)); }},
      {"dtype", [](const TensorSpec& s) { return std::string(dtype_name(s.dtype)); }},
      // Each rank computes on its own GPU: only host against device memory differs.
      {"device", [](const TensorSpec& s) { return std::string(s.device == HVD_DEVICE_CPU ? "cpu" : "gpu"); }},
  };
  // Allreduce and broadcast compare the shape itself (below), whose number of
  // dimensions is part of it and may be absent on a rank that gave a count.
  if (!counted)
    fields.push_back({"number of dimensions", [](const TensorSpec& s) { return std::to_string(s.shape.size()); }});
  if (op == OpType::Allreduce || op == OpType::Reducescatter) {
    fields.push_back({"reduce op", [](const TensorSpec& s) {
                        return std::string(reduce_op_name(s.reduce_op));
                      }});
    fields.push_back({"prescale factor", [](const TensorSpec& s) { return double_text(s.prescale); }});
    fields.push_back({"postscale factor", [](const TensorSpec& s) { return double_text(s.postscale); }});
  }
  // Every grouped operation: a rank whose group is larger waits on its extra members
  // otherwise, while its peers' smaller groups complete (Controller::fail_group_members).
  fields.push_back({"group size", [](const TensorSpec& s) { return std::to_string(s.group_size); }});
  if (op == OpType::Broadcast)
    fields.push_back({"root rank", [](const TensorSpec& s) { return std::to_string(s.root); }});
  if (counted) {
    // Ranks that gave a shape must agree on it (Horovod compares shapes); then every
    // rank on the element count, which is all a rank that gave no shape states.
    fields.push_back({"shape", [](const TensorSpec& s) { return shape_text(s.shape, 0); },
                      [](const TensorSpec& s) { return s.shape_given; }});
    fields.push_back({"count", [](const TensorSpec& s) { return std::to_string(s.num_elements()); }});
  } else if (op == OpType::Reducescatter) {
    fields.push_back({"shape", [](const TensorSpec& s) { return shape_text(s.shape, 0); }});
  } else if (rows_differ) {
    fields.push_back({"shape after the first dimension",
                      [](const TensorSpec& s) { return shape_text(s.shape, 1); }});
  }
  if (op == OpType::ProcessSetAdd)
    fields.push_back({"member ranks", [](const TensorSpec& s) {
                        std::string t;
                        for (int64_t r : s.splits) t += (t.empty() ? "" : ",") + std::to_string(r);
                        return "[" + t + "]";
                      }});
  if (op == OpType::ProcessSetRemove)
    fields.push_back({"process set id", [](const TensorSpec& s) { return std::to_string(s.root); }});
  if (op == OpType::Alltoall)
    fields.push_back({"number of send splits",
                      [](const TensorSpec& s) { return std::to_string(s.splits.size()); }});

  for (const Field& field : fields) {
    std::vector<std::string> values;
    std::vector<int> ranks;
    bool differ = false;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (field.applies && !field.applies(specs[i])) continue;
      values.push_back(field.describe(specs[i]));
      ranks.push_back(world_ranks[i]);
      differ = differ || values.back() != values.front();
    }
    if (differ) {
      response.error = make_error(HVD_ERR_MISMATCH, "tensor '%s': ranks disagree on the %s: %s",
                                  name.c_str(), field.what, group_ranks(values, ranks).c_str());
      return response;
    }
  }

  if (op == OpType::Allreduce || op == OpType::Reducescatter) {
    response.error =
        reduction_error(name, response.spec, set_size < 0 ? static_cast<int>(specs.size()) : set_size);
    if (!response.error.ok()) return response;
  }
  if ((op == OpType::Allgather || op == OpType::Reducescatter || op == OpType::Alltoall) &&
      response.spec.shape.empty()) {
    response.error = make_error(HVD_ERR_INVALID_ARGUMENT,
                                "tensor '%s': %s needs a tensor of at least one dimension (rows "
                                "along the first); every rank passed a scalar (ndim 0)",
                                name.c_str(), op_type_name(op));
    return response;
  }

  if (op == OpType::Allgather) {
    for (const TensorSpec& s : specs) response.per_rank.push_back(s.shape.empty() ? 0 : s.shape[0]);
    response.spec.shape[0] = 0;  // per rank
  } else if (op == OpType::Alltoall) {
    for (const TensorSpec& s : specs)
      response.per_rank.insert(response.per_rank.end(), s.splits.begin(), s.splits.end());
    response.spec.splits.clear();
    if (!response.spec.shape.empty()) response.spec.shape[0] = 0;
  }
  return response;
}

}  // namespace hvd
