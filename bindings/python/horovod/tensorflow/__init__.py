"""horovod.tensorflow on libhvd: everything hvd.tensorflow provides, under Horovod's
names (horovod.tensorflow.keras is hvd.keras, for Keras 3)."""
from hvd.tensorflow import *  # noqa: F401,F403 - the whole API is the point
from hvd.tensorflow import (Compression, DistributedGradientTape,  # noqa: F401
                            HorovodInternalError, ProcessSet, global_process_set)
from .util import _executing_eagerly  # noqa: F401 - Horovod's tests reach it here
from . import elastic  # noqa: F401,E402 - horovod.tensorflow.elastic, as Horovod's

from .. import _keras_compat
_keras_compat.callable_optimizer_variables()  # opt.variables(), as Horovod's examples call it
_keras_compat.compile_accepts_run_tf_function()  # compile(experimental_run_tf_function=)

# The star import above brought hvd's own mpi_ops module in under this name (and then
# `from . import mpi_ops` would keep it); Horovod's code, its tests too, reaches
# horovod.*.mpi_ops through the package attribute.
del mpi_ops  # noqa: F821
from . import mpi_ops  # noqa: E402,F401


def __getattr__(name):
    from .._unavailable import missing_attribute
    raise missing_attribute(__name__, name)
