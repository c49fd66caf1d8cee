"""horovod.common.basics on libhvd: the framework-independent calls."""
from hvd.basics import process_set_ids, process_set_ranks
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

    @staticmethod
    def _get_process_set_ids_and_ranks():
        """{process set id: its global ranks} of every registered set (Horovod's
        internal call, which its tests use to check what init registered)."""
        return {set_id: process_set_ranks(set_id) for set_id in process_set_ids()}
