"""horovod.torch.elastic on libhvd: hvd.torch.elastic, for jobs of a fixed size (libhvd
has no elastic mode; hvd.elastic says what runs and what does not)."""
from hvd.torch.elastic import ElasticSampler, TorchState, run  # noqa: F401

from . import sampler, state  # noqa: F401
