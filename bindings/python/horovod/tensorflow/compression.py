"""horovod.tensorflow.compression on libhvd."""
from hvd.tensorflow.compression import (Compression, Compressor,  # noqa: F401
                                        FP16Compressor, NoneCompressor)
