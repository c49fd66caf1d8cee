"""Horovod's elastic Keras callbacks: they commit the state and keep its batch and
epoch as model.fit goes, so that a restored state resumes where the job was."""
import keras

__all__ = ["CommitStateCallback", "UpdateBatchStateCallback", "UpdateEpochStateCallback"]


class CommitStateCallback(keras.callbacks.Callback):
    """Commits `state` at the end of every `batches_per_commit`-th batch and of every
    epoch. The count starts afresh when fit begins, the same on every rank, so that
    every rank commits at the same batches (a commit is a collective)."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        self.batches_remaining = self.batches_per_commit

    def on_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.commit()

    def commit(self):
        self.state.commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Sets `state.batch` to the index of the batch that ended, and to 0 when an epoch
    ends. When fit runs a given number of steps per epoch, the first epoch after a
    reset counts the batches already done: params['steps'] is shortened by
    state.batch, as Horovod's callback does (Keras 3 shows it in the progress bar; the
    epoch itself runs the steps fit was given)."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs=None):
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.params.get("steps"):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = self.params.get("steps")
            self.params["steps"] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Sets `state.epoch` when an epoch ends: the number of epochs done in the whole
    job, across resets (Keras counts from 0 in each fit), so that a reset after the
    epoch's last commit does not repeat it."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self.initial_epoch + epoch + 1
