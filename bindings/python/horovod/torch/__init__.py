"""horovod.torch on libhvd: everything hvd.torch provides, under Horovod's names."""
from hvd.torch import *  # noqa: F401,F403 - the whole API is the point
from hvd.torch import (Compression, DistributedOptimizer, HorovodInternalError,  # noqa: F401
                       ProcessSet, global_process_set)

from . import elastic  # noqa: F401,E402 - horovod.torch.elastic, as Horovod's

# The star import above brought hvd's own mpi_ops module in under this name (and then
# `from . import mpi_ops` would keep it); Horovod's code, its tests too, reaches
# horovod.*.mpi_ops through the package attribute.
del mpi_ops  # noqa: F821
from . import mpi_ops  # noqa: E402,F401


def __getattr__(name):
    from .._unavailable import missing_attribute
    raise missing_attribute(__name__, name)
