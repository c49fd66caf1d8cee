"""horovod.torch on libhvd: everything hvd.torch provides, under Horovod's names."""
from hvd.torch import *  # noqa: F401,F403 - the whole API is the point
from hvd.torch import (Compression, DistributedOptimizer, HorovodInternalError,  # noqa: F401
                       ProcessSet, global_process_set)

from . import elastic  # noqa: F401,E402 - horovod.torch.elastic, as Horovod's


def __getattr__(name):
    from .._unavailable import missing_attribute
    raise missing_attribute(__name__, name)
