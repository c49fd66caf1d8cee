"""TorchState: a model, an optimizer, an ElasticSampler and plain values, committed,
restored and synchronized together (hvd.elastic)."""
import copy
import io

import torch

from ...basics import rank
from ...elastic import ObjectState
from ...elastic._state import dumps_naming_attribute
from ..functions import broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .sampler import ElasticSampler

__all__ = ["TorchState", "StateHandler", "ModelStateHandler", "OptimizerStateHandler",
           "SamplerStateHandler", "get_handler_registry", "set_handler_registry"]


class StateHandler:
    """Saves, restores and synchronizes one value of a TorchState."""

    def __init__(self, value):
        self.value = value

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()

    def set_value(self, value):
        self.value = value
        self.save()

    def saved_state(self):
        """The saved value, as torch.save can write it (an elastic job's commit)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be kept across the generations of an elastic "
            "job: define saved_state() and load_saved_state()")

    def load_saved_state(self, saved):
        """Makes `saved` (from saved_state) the saved value; restore() loads it."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be restored in an elastic job: define "
            "saved_state() and load_saved_state()")


class _StateDictHandler(StateHandler):
    """A value with state_dict() and load_state_dict(): saved as a copy of its
    state_dict; subclasses say how to synchronize it."""

    def __init__(self, value):
        super().__init__(value)
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)

    def saved_state(self):
        return self._saved

    def load_saved_state(self, saved):
        self._saved = saved


class ModelStateHandler(_StateDictHandler):
    """A torch.nn.Module."""

    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(_StateDictHandler):
    """A torch.optim.Optimizer (a DistributedOptimizer too)."""

    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class SamplerStateHandler(_StateDictHandler):
    """An ElasticSampler: its epoch and the count of samples processed in it, rank 0's
    on every rank after a sync."""

    def sync(self):
        self.value.load_state_dict(broadcast_object(self.value.state_dict(), root_rank=0,
                                                    name="elastic.sampler.state"))


_handler_registry = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry():
    """The (type, handler class) pairs TorchState picks handlers from, first match."""
    return _handler_registry


def set_handler_registry(registry):
    global _handler_registry
    _handler_registry = registry


def _handler_for(value):
    for kind, handler in _handler_registry:
        if isinstance(value, kind):
            return handler(value)
    return None


class TorchState(ObjectState):
    """The state of a PyTorch training job for hvd.elastic.run.

        state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0)

    Models, optimizers and ElasticSamplers (any keyword) are saved as copies of their
    state_dict and synchronized with broadcast_parameters, broadcast_optimizer_state and
    a broadcast of the sampler's state; other keywords are plain values (ObjectState).
    After sync() the synchronized state is also the committed one, for the handled
    values as for the plain ones (Horovod's restore() before a first commit goes back
    to a model's and optimizer's state before the sync, different on each rank).

    In an elastic job each commit writes the saved state with torch.save (tensors bit
    for bit, on the CPU), and sync() at the start of a generation loads the newest
    commit into the model, the optimizer and the sampler (which deals the samples left
    in its epoch to the new number of ranks)."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)  # None: a plain value
        handlers, values = {}, {}
        for name, value in kwargs.items():
            handler = _handler_for(value)
            if handler is None:
                values[name] = value
            else:
                handlers[name] = handler
        object.__setattr__(self, "_handlers", handlers)
        for name, handler in handlers.items():
            object.__setattr__(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **values)

    def __setattr__(self, name, value):
        handlers = self.__dict__.get("_handlers", {})
        if name in handlers:
            handlers[name].set_value(value)
        super().__setattr__(name, value)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        if self._restore_newest_commit():
            return
        for handler in self._handlers.values():
            handler.sync()
            handler.save()
        super().sync()

    def state_bytes(self):
        """The saved state as torch.save writes it: tensors bit for bit."""
        saved = {name: handler.saved_state() for name, handler in self._handlers.items()}
        saved.update(self._saved_state)
        return dumps_naming_attribute(saved, _torch_dumps)

    def load_state_bytes(self, data):
        saved = _torch_loads(data)
        for name, handler in self._handlers.items():
            if name in saved:
                handler.load_saved_state(saved.pop(name))
        self._saved_state = {**self._saved_state, **saved}
        self.restore()


def _torch_dumps(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _torch_loads(data):
    # On the CPU: the saving rank's device may not exist here; load_state_dict copies
    # the values onto the model's and optimizer's own devices.
    buffer = io.BytesIO(data)
    try:
        return torch.load(buffer, map_location="cpu", weights_only=False)
    except TypeError:  # a torch without weights_only (before 1.13)
        buffer.seek(0)
        return torch.load(buffer, map_location="cpu")
