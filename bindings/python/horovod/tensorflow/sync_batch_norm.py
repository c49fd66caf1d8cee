"""horovod.tensorflow.sync_batch_norm on libhvd."""
from hvd.tensorflow.sync_batch_norm import SyncBatchNormalization  # noqa: F401
