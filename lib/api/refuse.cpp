// Exported: hvd_refuse, a binding's own refusal of a collective, announced to the
// peers as libhvd announces the calls it refuses (api/validate.h: RefusalNotice).
#include <cstring>
#include <string>

#include "api/validate.h"
#include "hvd/hvd.h"

using namespace hvd;

namespace {

struct RefusableOp {
  const char* name;  // as the automatic name's prefix
  OpType op;
  bool grouped;
};

constexpr RefusableOp kRefusableOps[] = {
    {"allreduce", OpType::Allreduce, false},
    {"broadcast", OpType::Broadcast, false},
    {"allgather", OpType::Allgather, false},
    {"alltoall", OpType::Alltoall, false},
    {"reducescatter", OpType::Reducescatter, false},
    {"grouped_allreduce", OpType::Allreduce, true},
    {"grouped_allgather", OpType::Allgather, true},
    {"grouped_reducescatter", OpType::Reducescatter, true},
};

const RefusableOp* find_op(const char* op) {
  if (!op) return nullptr;
  for (const RefusableOp& r : kRefusableOps)
    if (std::strcmp(r.name, op) == 0) return &r;
  return nullptr;
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_refuse(const char* op, const char* name, int ntensors,
                                const hvd_op_options_t* options, const char* reason) {
  HVD_API_GUARD({
    const RefusableOp* refused = find_op(op);
    if (!refused)
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_refuse: op '%s' is not a collective's name; expected allreduce, broadcast, "
                  "allgather, alltoall, reducescatter or grouped_allreduce, grouped_allgather, "
                  "grouped_reducescatter",
                  op ? op : "(NULL)");
    if (!reason || !*reason)
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_refuse: reason is NULL or empty; the other ranks are told it");
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string resolved;
    HVD_TRY(begin({"hvd_refuse", refused->name, name}, options, &rt, &opts, &set, &resolved));
    RefusalNotice notice(*rt, refused->op, resolved, opts.process_set);
    if (refused->grouped) notice.group(ntensors);
    notice.reason(reason);
    return HVD_SUCCESS;  // the notice announces as it goes
  })
}

}  // extern "C"
