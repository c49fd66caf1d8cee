// Stands in for copy_kernel.cu in builds without nvcc.
#include "ops/device/copy_kernel.h"

namespace hvd {

bool copy_kernel_available() { return false; }

int launch_copy_kernel(const CopyTable&, int, double, int, void*) {
  return 801;  // cudaErrorNotSupported; never reached, see copy_kernel_available
}

}  // namespace hvd
