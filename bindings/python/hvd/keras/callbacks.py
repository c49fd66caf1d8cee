"""Horovod's Keras callbacks on Keras 3, for any supported backend.

Callbacks run eagerly between steps, so their collectives go through the numpy layer
and assign the results back to Keras variables, the same on every backend.
"""
import warnings

import keras
import numpy as np

from .. import collectives
from ..basics import Average, global_process_set, size
from .variables import broadcast_variables, model_variables


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts root_rank's model and optimizer variables to every rank when training
    begins, so that every rank starts from the same state (after a random
    initialization or a checkpoint restored on one rank). Variables passed as
    local_variables, or registered with register_local_var, are left alone."""

    def __init__(self, root_rank, device='', local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.device = device  # Horovod's signature; broadcasts run on host memory
        self.broadcast_done = False
        self._local_vars = []
        for var in local_variables or []:
            self.register_local_var(var)

    def register_local_var(self, var):
        """Leaves `var` out of the broadcast."""
        self._local_vars.append(var)

    def _broadcast(self):
        if self.broadcast_done:
            return
        variables = [v for v in model_variables(self.model)
                     if not any(v is local for local in self._local_vars)]
        broadcast_variables(variables, self.root_rank)
        self.broadcast_done = True

    def on_train_begin(self, logs=None):
        # Keras 3 has built the model and its optimizer before training begins:
        # the first step already starts from root_rank's state.
        self._broadcast()

    def on_batch_end(self, batch, logs=None):
        self._broadcast()  # a model first built by its first step


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages the metrics in the epoch's logs over the ranks at the end of each
    epoch, so that later callbacks (checkpoints, early stopping, the learning rate
    schedule) decide the same on every rank. Must come before them in the list."""

    def __init__(self, device=''):
        super().__init__()
        self.device = device

    def _average_metrics_in_place(self, logs):
        if not logs:
            return
        names = sorted(logs)  # the same order on every rank
        values = [np.asarray(logs[n], dtype=np.float64).reshape(-1) for n in names]
        handles = [collectives.allreduce_async(np.ascontiguousarray(v), Average, None,
                                               1.0, 1.0, global_process_set)
                   for v in values]
        for n, v, h in zip(names, values, handles):
            reduced = h.wait()
            logs[n] = float(reduced[0]) if v.size == 1 else reduced

    def on_epoch_end(self, epoch, logs=None):
        self._average_metrics_in_place(logs)


def _get_value(variable_or_value):
    value = getattr(variable_or_value, "value", variable_or_value)
    return float(keras.ops.convert_to_numpy(value))


def _set_value(owner, attribute, value):
    """Sets an optimizer hyperparameter: assigned when it is a variable (the compiled
    step reads it), else replaced."""
    current = getattr(owner, attribute)
    if isinstance(current, keras.Variable):
        current.assign(value)
    else:
        setattr(owner, attribute, value)


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to initial_lr * multiplier(epoch) from start_epoch until
    end_epoch, at each epoch's start (staircase) or at every batch (the epoch then
    fractional). momentum_correction scales the momentum by new_lr / old_lr for the
    step where the rate changes, when the optimizer keeps its momentum in a variable
    (Keras 3's SGD keeps a Python float, which a compiled step has baked in)."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None,
                 staircase=True, momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.restore_momentum = None
        self.current_epoch = None
        if not callable(multiplier):
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)
        else:
            self.multiplier = multiplier

    def _autodetect_steps_per_epoch(self):
        if self.params.get("steps"):
            return self.params["steps"]
        raise ValueError("Could not autodetect the number of steps per epoch: pass "
                         f"steps_per_epoch to {type(self).__name__}()")

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _get_value(optimizer.learning_rate)
        new_lr = self.initial_lr * self.multiplier(epoch)
        optimizer.learning_rate = new_lr
        momentum = getattr(optimizer, "momentum", None)
        if self.momentum_correction and isinstance(momentum, keras.Variable) and old_lr:
            self.restore_momentum = _get_value(momentum)
            momentum.assign(self.restore_momentum * new_lr / old_lr)

    def _restore_momentum_if_needed(self):
        if self.restore_momentum is not None:
            self.model.optimizer.momentum.assign(self.restore_momentum)
            self.restore_momentum = None

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        if (self.current_epoch < self.start_epoch or
                (self.end_epoch is not None and self.current_epoch >= self.end_epoch)):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_batch_end(self, batch, logs=None):
        self._restore_momentum_if_needed()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _get_value(self.model.optimizer.learning_rate)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Raises the learning rate from initial_lr / size to initial_lr over warmup_epochs
    (Goyal et al., "Accurate, Large Minibatch SGD"), batch by batch."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            # round numbers at the end of each epoch
            epoch += 1. / self.steps_per_epoch
            return 1. / size() * (epoch * (size() - 1) / warmup_epochs + 1)
        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        from ..basics import rank
        if epoch == self.end_epoch - 1 and self.verbose > 0 and rank() == 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to "
                  f"{_get_value(self.model.optimizer.learning_rate):g}.")


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """A ModelCheckpoint that keeps only the best model, to a filepath set later
    (`callback.filepath = ...`, as Horovod's estimators do): Keras 3 insists on a
    path at construction, so a placeholder stands there until then."""

    def __init__(self, monitor='val_loss', verbose=0, save_weights_only=False,
                 mode='auto', save_freq='epoch'):
        placeholder = "best.weights.h5" if save_weights_only else "best.keras"
        super().__init__(filepath=placeholder, monitor=monitor, verbose=verbose,
                         save_best_only=True, save_weights_only=save_weights_only,
                         mode=mode, save_freq=save_freq)
        self.filepath = None

    def on_train_begin(self, logs=None):
        if self.filepath is None:
            warnings.warn("BestModelCheckpoint: no filepath was set; nothing is saved")
        super().on_train_begin(logs)

    def _save_model(self, *args, **kwargs):
        if self.filepath is not None:
            super()._save_model(*args, **kwargs)
