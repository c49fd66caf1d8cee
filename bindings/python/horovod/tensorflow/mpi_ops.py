"""horovod.tensorflow.mpi_ops on libhvd: the collectives and rank ops under the module
name Horovod's code imports them from."""
from hvd.tensorflow.mpi_ops import *  # noqa: F401,F403
from hvd.tensorflow.rank_ops import *  # noqa: F401,F403
from hvd.tensorflow import (Adasum, Average, Max, Min, Product, ProcessSet,  # noqa: F401
                            Sum, add_process_set, global_process_set, init, is_initialized,
                            local_rank, local_size, rank, remove_process_set, shutdown, size)
from horovod.common.basics import HorovodBasics as _HorovodBasics

# Horovod's module-level basics object, which its tests reach into.
_basics = _HorovodBasics()
