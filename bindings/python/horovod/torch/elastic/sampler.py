"""horovod.torch.elastic.sampler on libhvd."""
from hvd.torch.elastic.sampler import ElasticSampler  # noqa: F401
