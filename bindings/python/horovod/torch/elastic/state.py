"""horovod.torch.elastic.state on libhvd."""
from hvd.torch.elastic.state import *  # noqa: F401,F403
from hvd.torch.elastic.state import ObjectState  # noqa: F401
