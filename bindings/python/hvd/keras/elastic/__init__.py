"""Horovod's elastic API for Keras 3 (horovod.keras.elastic,
horovod.tensorflow.keras.elastic), on the TensorFlow and torch backends; hvd.elastic
says how it runs, in an elastic job launched by hvdrun or in a job of fixed size.

    state = hvd.elastic.KerasState(model, batch=0, epoch=0)
    callbacks = [hvd.elastic.CommitStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.UpdateEpochStateCallback(state)]

    @hvd.elastic.run
    def train(state):
        state.model.fit(x, y, steps_per_epoch=..., epochs=epochs - state.epoch,
                        callbacks=callbacks)

    train(state)
"""
from ...elastic import HostsUpdatedInterrupt, ObjectState, State, run_fn  # noqa: F401
from .. import _backend
from .callbacks import CommitStateCallback, UpdateBatchStateCallback, UpdateEpochStateCallback
from .state import KerasState, TensorFlowKerasState  # noqa: F401

__all__ = ["KerasState", "CommitStateCallback", "UpdateBatchStateCallback",
           "UpdateEpochStateCallback", "run"]


def run(func):
    """Decorates a training function of a state, as hvd.elastic.run does; on the
    TensorFlow backend a collective that failed inside Keras's compiled step is raised
    as the HvdError it was (hvd.tensorflow.elastic.run)."""
    if _backend.name() == "tensorflow":
        from ...tensorflow.elastic import run as tensorflow_run
        return tensorflow_run(func)
    return run_fn(func)
