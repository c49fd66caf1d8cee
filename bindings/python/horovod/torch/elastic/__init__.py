"""horovod.torch.elastic on libhvd: hvd.torch.elastic (hvd.elastic says how an
elastic job runs on MPI)."""
from hvd.torch.elastic import ElasticSampler, TorchState, run  # noqa: F401

from . import sampler, state  # noqa: F401
