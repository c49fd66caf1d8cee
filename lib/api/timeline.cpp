// Exported: the timeline (Chrome trace of negotiation and execution per tensor).
#include "api/validate.h"
#include "hvd/hvd.h"
#include "timeline/timeline.h"

using namespace hvd;


extern "C" {

HVD_API hvd_status_t hvd_start_timeline(const char* file_path, int mark_cycles) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_start_timeline", &rt));
    if (!file_path || !*file_path)
      return fail(HVD_ERR_INVALID_ARGUMENT, "file_path is NULL or empty");
    if (rt->rank != 0) return HVD_SUCCESS;  // rank 0 records the job, as in Horovod
    std::string why;
    if (!process_timeline().start(file_path, mark_cycles != 0, &why))
      return fail(HVD_ERR_INVALID_ARGUMENT, "cannot start the timeline: %s", why.c_str());
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_stop_timeline(void) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_stop_timeline", &rt));
    process_timeline().stop();
    return HVD_SUCCESS;
  })
}

}  // extern "C"
