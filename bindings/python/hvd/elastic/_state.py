"""Horovod's elastic state classes: State and ObjectState.

A state is committed (saved), restored to the last commit, and synchronized so that
every rank holds the same. In a job of fixed size it lives in memory, as Horovod keeps
it. In an elastic job (launched by hvdrun with HOROVOD_ELASTIC=1, see hvd.elastic) a
commit also writes it to the node's state directory, sync() restores the newest commit
found on any node, and check_host_updates() raises HostsUpdatedInterrupt on every rank
at the same step when hvdrun announced a change of hosts.
"""
import pickle
import queue

from ._host_update import HostsUpdatedInterrupt, HostUpdateResult


class State:
    """The state of a training job: save() on commit, restore() after a failure,
    sync() to make every rank's equal. Subclasses define the three and reset(), and
    state_bytes()/load_state_bytes() to be kept across the generations of an elastic
    job."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []
        # The elastic session (hvd.elastic._session.Session) while hvd.elastic.run runs
        # this state in an elastic job; None in a job of fixed size.
        self._session = None

    def register_reset_callbacks(self, callbacks):
        """Functions to call after a reset: in an elastic job, when a generation other
        than the first starts (the job's size may have changed), before the state is
        synchronized. A common use: scale the learning rate to the new size."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Called (on rank 0, from a background thread) when hvdrun announces a change
        of hosts; the next check_host_updates acts on it."""
        self._host_messages.put((timestamp, update_res))

    def commit(self):
        """Saves the state; in an elastic job also writes it to the node's state
        directory, then checks for changes of hosts (HostsUpdatedInterrupt). Every rank
        commits at the same steps: the check is a collective."""
        self.save()
        session = _session_of(self)
        if session is not None:
            session.persist(self)
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank when hvdrun announced a change of
        hosts since the last check: rank 0's news is broadcast, so every rank raises at
        the same call. In a job of fixed size hosts never change: nothing is checked
        and no collective is made."""
        session = _session_of(self)
        if session is None:
            return
        last_updated_timestamp = prev_timestamp = self._last_updated_timestamp
        all_update = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, update = self._host_messages.get()
            if timestamp > last_updated_timestamp:
                last_updated_timestamp = timestamp
                all_update |= update
        prev_timestamp, self._last_updated_timestamp, all_update = \
            session.agree_on_host_updates(
                (prev_timestamp, last_updated_timestamp, int(all_update)))
        if self._last_updated_timestamp > prev_timestamp:
            raise HostsUpdatedInterrupt(all_update == HostUpdateResult.removed)

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()

    def reset(self):
        """Adapts the state to a new set of ranks, before it is synchronized."""

    def state_bytes(self):
        """The saved state as bytes, for the state directory of an elastic job."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be kept across the generations of an elastic "
            "job: derive it from ObjectState (or TorchState), or define state_bytes() and "
            "load_state_bytes()")

    def load_state_bytes(self, data):
        """Makes `data` (from state_bytes) the saved state and restores it."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be restored from an elastic job's state "
            "directory: define state_bytes() and load_state_bytes()")

    def _restore_newest_commit(self):
        """In an elastic job: restores the newest commit any node holds and returns
        True, or False when there is none (the first generation before any commit)."""
        session = _session_of(self)
        return session is not None and session.restore_newest(self)


class ObjectState(State):
    """State held in attributes given as keyword arguments (epoch=0, batch=0):
    commit saves their values, restore sets them back, sync takes rank 0's committed
    values on every rank. Values are kept as they are, not copied: reassign an
    attribute rather than change an object in place. In an elastic job they are
    pickled at each commit."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._restore_newest_commit():
            return
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def state_bytes(self):
        return dumps_naming_attribute(self._saved_state, pickle.dumps)

    def load_state_bytes(self, data):
        self._saved_state = {**self._saved_state, **pickle.loads(data)}
        self.restore()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def _session_of(state):
    # A subclass written for Horovod may set its attributes before State.__init__ runs.
    return getattr(state, "_session", None)


def dumps_naming_attribute(values, dumps):
    """dumps(values) for a dict of attributes; when it fails, a TypeError that names
    the first attribute that cannot be serialized."""
    try:
        return dumps(values)
    except Exception as error:  # noqa: BLE001 - pickling raises many kinds
        for name, value in values.items():
            try:
                dumps({name: value})
            except Exception as attribute_error:  # noqa: BLE001
                raise TypeError(
                    f"hvd.elastic: commit: the state attribute '{name}' "
                    f"({type(value).__name__}) cannot be pickled ({attribute_error}); an "
                    "elastic job keeps the committed state in files between generations: "
                    "keep picklable values in the state (numbers, tensors, dicts) and "
                    "rebuild the others in a reset callback") from attribute_error
        raise TypeError(f"hvd.elastic: commit: the state cannot be pickled ({error})") from error
