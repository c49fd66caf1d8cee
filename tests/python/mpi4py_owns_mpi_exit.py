"""mpi4py imported first owns MPI and finalizes it at exit (Py_AtExit, after every
atexit function); the script never calls hvd.shutdown() and leaves an operation
pending on rank 0. libhvd must shut down at interpreter exit, before that
MPI_Finalize, and the process exit with status 0 (it used to abort: the background
thread called MPI after MPI_Finalize)."""
from mpi4py import MPI  # noqa: F401  (first: mpi4py initializes MPI and finalizes it)
import numpy as np

import hvd

hvd.init()
out = hvd.allreduce(np.ones(1000, np.float32), op=hvd.Sum, name="owned.sum")
assert np.all(out == hvd.size()), out[:4]
if hvd.rank() == 0 and hvd.size() > 1:
    # The other ranks are exiting: when rank 0 gets here after it saw their shutdown,
    # libhvd refuses the call at once instead of leaving it pending. Either way the
    # process must exit cleanly.
    try:
        pending = hvd.allreduce_async(np.ones(4, np.float32), name="owned.pending")
    except hvd.ShutDownError:
        pass
print(f"rank {hvd.rank()}: exiting without hvd.shutdown()")
