// Exported: barrier and join. Both are negotiated like tensors, under reserved names,
// so they order themselves with every other pending operation.
#include <algorithm>

#include "api/validate.h"
#include "runtime/enqueue.h"
#include "hvd/hvd.h"

using namespace hvd;

namespace {

Error run_blocking(Runtime& rt, std::vector<Request>&& requests) {
  hvd_handle_t handle;
  Error err = enqueue(rt, std::move(requests), &handle);
  if (!err.ok()) return err;
  return wait_handle(handle, kWaitSpinUs);
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_barrier(int32_t process_set_id) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    std::shared_ptr<ProcessSet> set;
    HVD_TRY(require_runtime("hvd_barrier", &rt));
    HVD_TRY(check_process_set(*rt, process_set_id, &set));
    std::vector<Request> requests(1);
    OpOptions opts;
    opts.process_set = process_set_id;
    requests[0] = make_request("barrier", opts, OpType::Barrier, HVD_UINT8);
    return finish(run_blocking(*rt, std::move(requests)));
  })
}

HVD_API hvd_status_t hvd_join(int device, int* last_joined_rank) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_join", &rt));
    HVD_TRY(check_device(device));
    int64_t last = -1;
    std::vector<Request> requests(1);
    OpOptions opts;
    requests[0] = make_request("join", opts, OpType::Join, HVD_UINT8);
    // The device only says where zero buffers would live; joining is the same for all.
    requests[0].out_value = &last;
    HVD_TRY(run_blocking(*rt, std::move(requests)));
    if (last_joined_rank) *last_joined_rank = static_cast<int>(last);
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_add_process_set(const int* ranks, int nranks, int32_t* process_set_id) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_add_process_set", &rt));
    if (!process_set_id)
      return fail(HVD_ERR_INVALID_ARGUMENT, "process_set_id (the output pointer) is NULL");
    if (nranks <= 0 || !ranks)
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "a process set needs at least one rank (ranks is %s, nranks is %d)",
                  ranks ? "given" : "NULL", nranks);
    std::vector<int64_t> members(ranks, ranks + nranks);
    std::sort(members.begin(), members.end());
    for (int i = 0; i < nranks; ++i) {
      if (members[i] < 0 || members[i] >= rt->size)
        return fail(HVD_ERR_INVALID_ARGUMENT, "rank %lld is out of range: there are %d ranks",
                    static_cast<long long>(members[i]), rt->size);
      if (i > 0 && members[i] == members[i - 1])
        return fail(HVD_ERR_INVALID_ARGUMENT, "rank %lld appears twice in the process set",
                    static_cast<long long>(members[i]));
    }
    int64_t id = -1;
    std::vector<Request> requests(1);
    OpOptions opts;
    requests[0] = make_request("process_set.add", opts, OpType::ProcessSetAdd, HVD_UINT8);
    requests[0].spec.splits = members;
    requests[0].out_value = &id;
    HVD_TRY(run_blocking(*rt, std::move(requests)));
    *process_set_id = static_cast<int32_t>(id);
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_remove_process_set(int32_t process_set_id) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_remove_process_set", &rt));
    if (process_set_id == 0)
      return fail(HVD_ERR_INVALID_ARGUMENT, "the global process set (id 0) cannot be removed");
    if (!rt->sets.find(process_set_id))
      return fail(HVD_ERR_INVALID_ARGUMENT, "process set %d does not exist", process_set_id);
    std::vector<Request> requests(1);
    OpOptions opts;
    requests[0] = make_request("process_set.remove", opts, OpType::ProcessSetRemove, HVD_UINT8);
    requests[0].spec.root = process_set_id;
    return finish(run_blocking(*rt, std::move(requests)));
  })
}

}  // extern "C"
