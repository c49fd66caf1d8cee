// hvd.h and hvd_mpi.h compile on their own as C++.
#include <hvd/hvd.h>
#include <hvd/hvd_mpi.h>
#include <hvd/hvd_version.h>

int main() {
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  static_assert(HVD_VERSION_NUMBER > 0, "version");
  return hvd_version() == HVD_VERSION_NUMBER && options.device == HVD_DEVICE_CPU ? 0 : 1;
}
