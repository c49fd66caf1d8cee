"""horovod.tensorflow.functions on libhvd."""
from hvd.tensorflow.functions import *  # noqa: F401,F403
