"""horovod.torch.sync_batch_norm on libhvd."""
from hvd.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
