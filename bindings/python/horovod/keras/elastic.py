"""horovod.keras.elastic on libhvd: hvd.keras.elastic, for Keras 3 (hvd.elastic says
how an elastic job runs on MPI)."""
from hvd.keras.elastic import (CommitStateCallback, KerasState,  # noqa: F401
                               UpdateBatchStateCallback, UpdateEpochStateCallback, run)
