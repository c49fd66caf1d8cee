"""horovod.tensorflow.elastic on libhvd (jobs of a fixed size; see hvd.elastic)."""
from hvd.tensorflow.elastic import (TensorFlowKerasState, TensorFlowState,  # noqa: F401
                                    run)
