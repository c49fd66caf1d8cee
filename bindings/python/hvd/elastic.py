"""Horovod's elastic state API for jobs of a fixed size.

Horovod's elastic training keeps a job's state in objects that can be committed
(saved in memory), restored after a failure and synchronized from rank 0 when ranks
join. libhvd has no elastic mode: a job keeps its ranks from start to end. Scripts
written for elastic training still run, as they do under Horovod when it is not
launched in elastic mode: `run` synchronizes the state once and calls the training
function; `commit` saves; `restore` goes back to the last commit. Hosts never change,
so `check_host_updates` has nothing to check and raises nothing, and a failed
collective (HorovodInternalError) restores the committed state and is raised: in a job
of fixed size no reset can heal it (a rank that died stays dead, ranks that disagree
would disagree again), where retrying as Horovod's elastic mode does would repeat the
failure for ever.
"""
import functools

from .errors import HvdError


class State:
    """The state of a training job: save() on commit, restore() after a failure,
    sync() to make every rank's equal to rank 0's. Subclasses define the three and
    reset()."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions to call after a reset (when the job's ranks change: never here)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Called by Horovod's elastic driver when hosts change; no such driver here."""

    def commit(self):
        """Saves the state, to be restored after a failure."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt when hosts were added or removed: never in a job
        of fixed size, so no collective is needed to agree on it."""

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()

    def reset(self):
        """Adapts the state to a new set of ranks (never called here)."""


class ObjectState(State):
    """State held in attributes given as keyword arguments (epoch=0, batch=0):
    commit saves their values, restore sets them back, sync takes rank 0's committed
    values on every rank. Values are kept as they are, not copied: reassign an
    attribute rather than change an object in place."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def run_fn(func, reset=None):
    """Wraps func(state, ...) as Horovod's elastic run does, for a job of fixed size:
    the state is synchronized from rank 0, then func runs. A failed collective
    restores the last committed state and is raised (see the module's docstring).
    reset (Horovod's shutdown-and-init between attempts) is accepted and never
    called."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        state.sync()
        try:
            return func(state, *args, **kwargs)
        except HvdError:
            state.restore()
            raise

    return wrapper
