// Exported functions whose implementation comes in a later release: each validates
// what it can and answers HVD_ERR_UNSUPPORTED, naming what is missing.
#include "api/validate.h"
#include "hvd/hvd.h"

using namespace hvd;

namespace {
hvd_status_t unsupported(const char* what) {
  return fail(HVD_ERR_UNSUPPORTED, "%s is not implemented in libhvd %s yet", what,
              hvd_version_string());
}
}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_start_timeline(const char*, int) {
  return unsupported("hvd_start_timeline");
}
HVD_API hvd_status_t hvd_stop_timeline(void) { return unsupported("hvd_stop_timeline"); }

}  // extern "C"
