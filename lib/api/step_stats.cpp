// Exported: step accounting (observe/step_stats.h).
#include <cstddef>
#include <cstdio>

#include "api/validate.h"
#include "observe/step_stats.h"
#include "hvd/hvd.h"
#include "timeline/timeline.h"

using namespace hvd;

namespace {

Error require_started(const char* function) {
  if (!step_stats().ever_started())
    return make_error(HVD_ERR_NOT_INITIALIZED,
                      "%s: libhvd was never initialized in this process (call hvd_init first)",
                      function);
  return Error::success();
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_get_step_stats(hvd_step_stats_t* stats) {
  HVD_API_GUARD({
    if (!stats) return fail(HVD_ERR_INVALID_ARGUMENT, "stats is NULL");
    constexpr size_t first_version = offsetof(hvd_step_stats_t, reserved);
    if (stats->struct_size < first_version)
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "stats->struct_size is %zu: set it to sizeof(hvd_step_stats_t) (or use "
                  "HVD_STEP_STATS_INITIALIZER)",
                  stats->struct_size);
    HVD_TRY(require_started("hvd_get_step_stats"));
    const StepStats& s = step_stats();
    const StepTotals t = s.totals();
    const double n = t.steps > 0 ? static_cast<double>(t.steps) : 0.0;
    auto mean = [n](double sum) { return n > 0 ? sum / n : 0.0; };
    stats->steps = t.steps;
    stats->warmup_steps = s.warmup();
    stats->step_seconds = mean(t.step_s);
    stats->exposed_wait_seconds = mean(t.wait_s);
    stats->negotiate_seconds = mean(t.negotiate_s);
    stats->copy_seconds = mean(t.copy_s);
    stats->transfer_seconds = mean(t.transfer_s);
    stats->bytes_per_step = n > 0 ? static_cast<int64_t>(static_cast<double>(t.bytes) / n + 0.5) : 0;
    stats->bus_bandwidth = t.transfer_s > 0 ? t.bus_bytes / t.transfer_s : 0.0;
    stats->reference_bus_bandwidth = s.reference_bus_bandwidth();
    stats->enabled = s.enabled() ? 1 : 0;
    stats->reserved_pad = 0;
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_get_step_top_tensors(hvd_step_tensor_t* tensors, int capacity,
                                              int* count) {
  HVD_API_GUARD({
    if (!count) return fail(HVD_ERR_INVALID_ARGUMENT, "count (the output pointer) is NULL");
    if (capacity < 0) return fail(HVD_ERR_INVALID_ARGUMENT, "capacity is %d (negative)", capacity);
    if (!tensors && capacity > 0)
      return fail(HVD_ERR_INVALID_ARGUMENT, "tensors is NULL but capacity is %d", capacity);
    HVD_TRY(require_started("hvd_get_step_top_tensors"));
    const StepStats& s = step_stats();
    const int64_t steps = s.totals().steps;
    const std::vector<TensorWait> top = s.top_tensors(static_cast<size_t>(capacity));
    for (size_t i = 0; i < top.size(); ++i) {
      std::snprintf(tensors[i].name, sizeof tensors[i].name, "%s", top[i].name.c_str());
      tensors[i].wait_seconds = steps > 0 ? top[i].wait_s / static_cast<double>(steps) : 0.0;
    }
    *count = static_cast<int>(top.size());
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_mark_step(void) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_mark_step", &rt));
    double step_s = 0;
    double wait_s = 0;
    if (step_stats().boundary(now_seconds(), true, &step_s, &wait_s) && rt->rank == 0)
      process_timeline().step_counter(static_cast<int64_t>(step_s * 1e9),
                                      static_cast<int64_t>(wait_s * 1e9));
    return HVD_SUCCESS;
  })
}

}  // extern "C"
