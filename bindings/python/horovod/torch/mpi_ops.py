"""horovod.torch.mpi_ops on libhvd: the collectives and the library queries."""
from hvd.torch import *  # noqa: F401,F403
from hvd.torch import (Adasum, Average, Max, Min, Product, ProcessSet, Sum,  # noqa: F401
                       global_process_set)
from hvd.torch.mpi_ops import *  # noqa: F401,F403
from hvd.torch.mpi_ops import SparseHandle  # noqa: F401
from horovod.common.basics import HorovodBasics as _HorovodBasics

# Horovod's module-level basics object, which its tests reach into.
_basics = _HorovodBasics()
