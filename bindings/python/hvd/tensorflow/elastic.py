"""Horovod's elastic API for TensorFlow (hvd.elastic.run, TensorFlowState,
TensorFlowKerasState), for jobs of a fixed size: see hvd.elastic for what it does and
does not do.

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    state = hvd.elastic.TensorFlowState(model.variables, epoch=0)
    train(state)
"""
import tensorflow as tf

from ..basics import rank
from ..elastic import ObjectState, run_fn
from .functions import broadcast_object, broadcast_variables

__all__ = ["run", "TensorFlowState", "TensorFlowKerasState"]


def run(func):
    """Decorates a training function of a state: the state is synchronized from rank 0
    before it runs; a failed collective restores the last commit and is raised."""
    return run_fn(func)


class TensorFlowState(ObjectState):
    """Variables (default: the TF1 graph's global variables) and plain values given as
    keyword arguments, committed, restored and synchronized together. Executing
    eagerly, sync() broadcasts rank 0's variables; in a TF1 graph it runs the broadcast
    in `session` (default: the default session)."""

    def __init__(self, variables=None, session=None, **kwargs):
        self.variables = list(variables if variables is not None
                              else tf.compat.v1.global_variables())
        self.session = session or tf.compat.v1.get_default_session()
        self._bcast_op = None if tf.executing_eagerly() else \
            broadcast_variables(self.variables, root_rank=0)
        self._save_variables()
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def save(self):
        self._save_variables()
        super().save()

    def restore(self):
        for var, value in zip(self.variables, self._values):
            if self._bcast_op is None:
                var.assign(value)
            else:
                var.load(value, self.session)
        super().restore()

    def sync(self):
        if self._bcast_op is None:
            broadcast_variables(self.variables, root_rank=0)
        elif self.session is not None:
            self.session.run(self._bcast_op)
        self._save_variables()
        super().sync()

    def _save_variables(self):
        if self._bcast_op is None:
            self._values = [tf.convert_to_tensor(v).numpy() for v in self.variables]
        else:
            self._values = [v.eval(self.session) for v in self.variables]


class TensorFlowKerasState(TensorFlowState):
    """A Keras model's variables (and its optimizer's, when given) as a TensorFlowState;
    `backend` is Horovod's argument, unused."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.model = model
        self.optimizer = optimizer or getattr(model, "optimizer", None)
        variables = list(model.variables)
        if self.optimizer is not None:
            variables += list(self.optimizer.variables)
        super().__init__(variables, **kwargs)
