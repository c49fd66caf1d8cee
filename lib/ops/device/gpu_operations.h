// HOROVOD_GPU_OPERATIONS: which backend device tensors go through (DeviceEngine).
#pragma once

namespace hvd {

// Auto: NCCL when the build has it, else host-staged MPI.
enum class GpuOperations { Auto, Nccl, Mpi };

}  // namespace hvd
