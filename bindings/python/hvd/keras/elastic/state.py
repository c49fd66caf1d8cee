"""KerasState: a Keras 3 model, its optimizer and plain values, committed, restored
and synchronized together (hvd.elastic), on the TensorFlow and torch backends."""
import keras

from ...basics import rank
from ...elastic._variables_state import VariablesState
from .. import _backend
from ..functions import broadcast_object
from ..variables import broadcast_variables

__all__ = ["KerasState", "TensorFlowKerasState"]


class KerasState(VariablesState):
    """The state of a Keras training job for hvd.keras.elastic.run.

        model.compile(optimizer=hvd.DistributedOptimizer(...), loss=...)
        state = hvd.elastic.KerasState(model, batch=0, epoch=0)

    The model's variables and its optimizer's (the compiled one unless `optimizer` is
    given; built here if it was not, so that its slots exist on every rank) are saved
    at each commit as numpy arrays, their bytes exactly, and assigned back on restore;
    sync() broadcasts rank 0's. The keywords are plain values (ObjectState). The model
    must be built (it has its variables) before the state is made."""

    def __init__(self, model, optimizer=None, **kwargs):
        _backend.name()
        if not model.built:
            raise ValueError(
                "KerasState: the model is not built yet, so it has no variables to keep; "
                "build it first (model.build(input_shape), or call it on a batch)")
        optimizer = optimizer or getattr(model, "optimizer", None)
        if optimizer is None:
            raise ValueError(
                "KerasState: the model has no optimizer; compile it with one, or pass "
                "optimizer=, so that the optimizer's state is kept with the weights")
        if not optimizer.built:
            optimizer.build(model.trainable_variables)
        self.model = model
        self.optimizer = optimizer
        super().__init__(variables=self._keras_variables, read=_numpy_of, assign=_assign,
                         broadcast=_broadcast_from_rank_0, bcast_object=broadcast_object,
                         get_rank=rank, **kwargs)

    def _keras_variables(self):
        return list(self.model.variables) + list(self.optimizer.variables)


class TensorFlowKerasState(KerasState):
    """Horovod's TensorFlowKerasState: KerasState, with Horovod's `backend` argument
    (TensorFlow 1's session source, unused by Keras 3)."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.backend = backend
        super().__init__(model, optimizer=optimizer, **kwargs)


def _numpy_of(variable):
    return keras.ops.convert_to_numpy(variable.value)


def _assign(variable, array):
    variable.assign(array)


def _broadcast_from_rank_0(variables):
    broadcast_variables(variables, root_rank=0)
