// Exported: process set queries.
#include <algorithm>

#include "api/validate.h"
#include "hvd/hvd.h"

using namespace hvd;

namespace {
std::shared_ptr<ProcessSet> lookup(int32_t id) {
  auto rt = current_runtime();
  return rt ? rt->sets.find(id) : nullptr;
}
}  // namespace

extern "C" {

HVD_API int hvd_process_set_rank(int32_t id) {
  auto set = lookup(id);
  return set ? set->my_set_rank : -1;
}

HVD_API int hvd_process_set_size(int32_t id) {
  auto set = lookup(id);
  return set ? set->size() : -1;
}

HVD_API int hvd_process_set_included(int32_t id) {
  auto set = lookup(id);
  return set ? (set->member() ? 1 : 0) : -1;
}

HVD_API hvd_status_t hvd_process_set_ranks(int32_t id, int* ranks, int capacity, int* nranks) {
  HVD_API_GUARD({
    if (!nranks) return fail(HVD_ERR_INVALID_ARGUMENT, "nranks (the output pointer) is NULL");
    if (capacity < 0 || (capacity > 0 && !ranks))
      return fail(HVD_ERR_INVALID_ARGUMENT, "ranks is NULL or capacity (%d) is negative", capacity);
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_process_set_ranks", &rt));
    auto set = rt->sets.find(id);
    if (!set) return fail(HVD_ERR_INVALID_ARGUMENT, "process set %d does not exist", id);
    *nranks = set->size();
    std::copy_n(set->ranks.begin(), std::min(capacity, set->size()), ranks);
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_process_set_ids(int32_t* ids, int capacity, int* count) {
  HVD_API_GUARD({
    if (!count) return fail(HVD_ERR_INVALID_ARGUMENT, "count (the output pointer) is NULL");
    if (capacity < 0 || (capacity > 0 && !ids))
      return fail(HVD_ERR_INVALID_ARGUMENT, "ids is NULL or capacity (%d) is negative", capacity);
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_process_set_ids", &rt));
    std::vector<int32_t> all = rt->sets.ids();
    *count = static_cast<int>(all.size());
    std::copy_n(all.begin(), std::min<size_t>(static_cast<size_t>(capacity), all.size()), ids);
    return HVD_SUCCESS;
  })
}

}  // extern "C"
