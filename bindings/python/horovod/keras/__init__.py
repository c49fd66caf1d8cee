"""horovod.keras on libhvd: Horovod's Keras API for Keras 3 (hvd.keras), on the TensorFlow
and torch backends."""
from hvd.keras import *  # noqa: F401,F403 - the whole API is the point
from hvd.keras import (Compression, DistributedOptimizer, HorovodInternalError,  # noqa: F401
                       PartialDistributedOptimizer, ProcessSet, broadcast_global_variables,
                       global_process_set, load_model)

from . import callbacks, elastic  # noqa: F401,E402 - as Horovod's
from .. import _keras_compat
_keras_compat.callable_optimizer_variables()  # opt.variables(), as Horovod's examples call it
_keras_compat.compile_accepts_run_tf_function()  # compile(experimental_run_tf_function=)


def __getattr__(name):
    from .._unavailable import missing_attribute
    raise missing_attribute(__name__, name)
