"""horovod.tensorflow on libhvd: everything hvd.tensorflow provides, under Horovod's
names (horovod.tensorflow.keras is hvd.keras, for Keras 3)."""
from hvd.tensorflow import *  # noqa: F401,F403 - the whole API is the point
from hvd.tensorflow import (Compression, DistributedGradientTape,  # noqa: F401
                            HorovodInternalError, ProcessSet, global_process_set)
from .util import _executing_eagerly  # noqa: F401 - Horovod's tests reach it here
from . import elastic  # noqa: F401,E402 - horovod.tensorflow.elastic, as Horovod's

from hvd.tensorflow._keras_compat import callable_optimizer_variables as _callable_variables
_callable_variables()  # opt.variables(), as Horovod's TF2 examples call it


def __getattr__(name):
    from .._unavailable import missing_attribute
    raise missing_attribute(__name__, name)
