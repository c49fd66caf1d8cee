"""Horovod's elastic API for TensorFlow 2 (hvd.elastic says how it runs, in an elastic
job launched by hvdrun or in a job of fixed size).

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    state = hvd.elastic.TensorFlowState(variables, epoch=0)        # tf.Variables
    state = hvd.elastic.TensorFlowKerasState(model, epoch=0)       # a Keras 3 model
    train(state)

The variables are saved as numpy arrays at each commit (bit for bit) and assigned
back on restore; in an elastic job the commit is also written to the node's state
directory and the next generation starts from the newest one.
"""
import functools

import numpy as np
import tensorflow as tf

from ..basics import rank
from ..elastic import HostsUpdatedInterrupt, ObjectState, State, run_fn  # noqa: F401
from ..elastic._variables_state import VariablesState
from ._graph_errors import hvd_error_in
from .functions import broadcast_object
from .mpi_ops import grouped_broadcast

__all__ = ["TensorFlowKerasState", "TensorFlowState", "run"]


def run(func):
    """Decorates a training function of a state, as hvd.elastic.run does. A collective
    that failed inside tf.function (or Keras's compiled step) reaches TensorFlow's
    caller as a tf.errors.OpError: it is raised as the HvdError it was, so that a
    failed collective ends the generation as one."""

    @functools.wraps(func)
    def raising_hvd_errors(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except tf.errors.OpError as error:
            hvd_error = hvd_error_in(error)
            if hvd_error is None:
                raise
            raise hvd_error from error

    return run_fn(raising_hvd_errors)


class TensorFlowState(VariablesState):
    """The state of a TensorFlow 2 training job: tf.Variables and plain values.

        state = hvd.elastic.TensorFlowState([w, b], epoch=0, batch=0)

    The variables' values are saved at each commit, assigned back on restore and
    broadcast from rank 0 by sync(); the keywords are plain values (ObjectState).
    TensorFlow 2 keeps no collection of global variables: name them. `session`
    (TensorFlow 1's) must be None."""

    def __init__(self, variables=None, session=None, **kwargs):
        if variables is None:
            raise ValueError(
                "TensorFlowState(variables): TensorFlow 2 keeps no collection of global "
                "variables; pass the variables to keep (a model's trainable_variables and "
                "its optimizer's variables)")
        if session is not None:
            raise ValueError("TensorFlowState: session is TensorFlow 1's; hvd.tensorflow "
                             "runs TensorFlow 2 eagerly: leave it out")
        self.variables = list(variables)
        self.session = None
        super().__init__(variables=lambda: self.variables, read=_numpy_of,
                         assign=_assign, broadcast=_broadcast_from_rank_0,
                         bcast_object=broadcast_object, get_rank=rank, **kwargs)


def _numpy_of(variable):
    return np.asarray(variable.numpy())


def _assign(variable, array):
    variable.assign(array)


def _broadcast_from_rank_0(variables):
    # tf.convert_to_tensor reads Keras 3 variables too (a model's, on the TensorFlow
    # backend), which have no read_value() for broadcast_variables.
    values = grouped_broadcast([tf.convert_to_tensor(v) for v in variables], root_rank=0)
    for variable, value in zip(variables, values):
        variable.assign(value)


def __getattr__(name):
    # TensorFlowKerasState is hvd.keras's KerasState: Keras is imported when it is asked
    # for, not with hvd.tensorflow.
    if name == "TensorFlowKerasState":
        from ..keras.elastic import TensorFlowKerasState
        return TensorFlowKerasState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
