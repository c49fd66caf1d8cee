"""horovod.tensorflow.elastic on libhvd: hvd.tensorflow.elastic (hvd.elastic says how
an elastic job runs on MPI); TensorFlowKerasState keeps a Keras 3 model."""
from hvd.tensorflow.elastic import TensorFlowState, run  # noqa: F401


def __getattr__(name):
    if name == "TensorFlowKerasState":
        from hvd.keras.elastic import TensorFlowKerasState
        return TensorFlowKerasState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
