"""horovod.common.basics on libhvd: the framework-independent calls."""
from hvd.basics import (ccl_built, cross_rank, cross_size, cuda_built,  # noqa: F401
                        ddl_built, gloo_built, gloo_enabled, gpu_device, init,
                        is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
                        mpi_enabled, mpi_threads_supported, nccl_built, rank, rocm_built,
                        shutdown, size, start_timeline, stop_timeline)


class HorovodBasics:
    """Horovod's object form of the same calls (it takes a library path; libhvd is
    already loaded, so the argument is ignored)."""

    def __init__(self, pkg_path=None, *args):
        for name in ("init", "shutdown", "is_initialized", "rank", "size", "local_rank",
                     "local_size", "cross_rank", "cross_size", "is_homogeneous",
                     "mpi_built", "mpi_enabled", "nccl_built", "cuda_built", "gloo_built",
                     "gloo_enabled", "ddl_built", "ccl_built", "rocm_built",
                     "mpi_threads_supported", "start_timeline", "stop_timeline"):
            setattr(self, name, globals()[name])
