"""horovod.torch.optimizer on libhvd."""
from hvd.torch.optimizer import DistributedOptimizer  # noqa: F401
