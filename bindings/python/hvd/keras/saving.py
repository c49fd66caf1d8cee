"""load_model: a saved Keras model whose optimizer comes back wrapped."""
import keras

from .compression import Compression
from .optimizer import DistributedOptimizer, _DistributedOptimizer


def _optimizer_classes():
    """Keras's optimizer classes (subclasses of keras.optimizers.Optimizer at any
    depth), not the wrapped ones."""
    found, pending = [], list(keras.optimizers.Optimizer.__subclasses__())
    while pending:
        cls = pending.pop()
        if issubclass(cls, _DistributedOptimizer) or cls in found:
            continue
        found.append(cls)
        pending += cls.__subclasses__()
    return found


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none, legacy_opts=False, **wrap_kwargs):
    """keras.models.load_model(filepath) with the saved optimizer (any of Keras's, or
    of custom_optimizers) wrapped in DistributedOptimizer, its state restored.
    legacy_opts (Keras 2's legacy optimizers) does not exist in Keras 3."""
    if legacy_opts:
        raise ValueError("load_model: legacy_opts=True names Keras 2's legacy "
                         "optimizers, which Keras 3 does not have")

    def wrapped(cls):
        class Factory:
            """What Keras deserializes the optimizer with: the wrapped optimizer."""

            @staticmethod
            def from_config(config, custom_objects=None):
                return DistributedOptimizer(cls.from_config(config),
                                            compression=compression, **wrap_kwargs)
        Factory.__name__ = cls.__name__
        return Factory

    objects = {cls.__name__: wrapped(cls) for cls in _optimizer_classes()}
    objects.update({cls.__name__: wrapped(cls) for cls in custom_optimizers or []})
    objects.update(custom_objects or {})
    return keras.models.load_model(filepath, custom_objects=objects)
