"""horovod.runner.common.util.env on libhvd: this process's rank and size as the
launcher's environment gives them, before init()."""
import os

# Horovod's (Gloo), Open MPI's and MPICH Hydra's names, in Horovod's order.
_RANK_AND_SIZE = [("HOROVOD_RANK", "HOROVOD_SIZE"),
                  ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                  ("PMI_RANK", "PMI_SIZE")]


def get_env_rank_and_size():
    """(rank, size) from the first launcher whose variables are set; (0, 1) when none
    is. One of a pair without the other is a RuntimeError, as in Horovod."""
    for rank_var, size_var in _RANK_AND_SIZE:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is not None and size is not None:
            return int(rank), int(size)
        if rank is not None or size is not None:
            raise RuntimeError(f"Could not determine process rank and size: only one of "
                               f"{rank_var} and {size_var} found in environment")
    return 0, 1
