"""This worker's part of an elastic job launched by hvdrun (HOROVOD_ELASTIC=1).

An elastic job is a sequence of generations, each an ordinary MPI job of fixed size
(docs/elastic.md). What survives from one generation to the next is the committed
state, in a file per local rank under HVD_ELASTIC_STATE_DIR (tmpfs): the session writes
it at each commit and, when a generation starts, restores the newest commit any rank's
node holds on every rank. Rank 0 listens to hvdrun for changes of hosts.
"""
import os
import socket
import threading

import numpy as np

from .. import basics, collectives, objects
from .._refusal import refuse
from ._driver import DriverConnection
from ._store import StateDir

_LAUNCH_HINT = ("launch elastic jobs with hvdrun's elastic flags (--min-np, --max-np, "
                "--host-discovery-script), which set it")

# The first collective of a generation.
SYNC_NEWEST = "hvd.elastic.sync.newest"

_session = None
_session_lock = threading.Lock()


def elastic_launch():
    """True when hvdrun launched this process as a worker of an elastic job."""
    return os.environ.get("HOROVOD_ELASTIC") == "1"


def current():
    """This process's session (made at the first call, after hvd.init()); None when the
    process was not launched as an elastic worker."""
    global _session
    if not elastic_launch():
        return None
    with _session_lock:
        if _session is None:
            try:
                _session = Session.from_environment()
            except Exception as error:
                # The peers go on to synchronize the state: tell them why this rank
                # does not, rather than leave them waiting for it.
                if basics.is_initialized():
                    refuse("allreduce", SYNC_NEWEST, None,
                           f"rank {basics.rank()} cannot run the elastic job: {error}")
                raise
        return _session


class Session:
    def __init__(self, generation, state_dir, driver=None, token=None):
        if not basics.is_initialized():
            raise ValueError("hvd.elastic.run: call hvd.init() before the elastic training "
                             "function runs")
        self.generation = generation
        self.store = StateDir(state_dir)
        # The number of the last commit saved or restored; grows by one per commit and
        # is carried from generation to generation in the state files.
        self.commit_number = 0
        # Where the restored commit came from (commit number, rank that broadcast it).
        self.restored_from = None
        self._checks = 0
        self._listeners = []
        self._updates = []
        self._lock = threading.Lock()
        self._driver = None
        if driver and basics.rank() == 0:
            self._driver = DriverConnection(driver, token, generation, self._deliver)
        _publish_topology()

    @classmethod
    def from_environment(cls):
        generation = os.environ.get("HVD_ELASTIC_GENERATION", "")
        if not generation.isdigit():
            raise ValueError("hvd.elastic: HOROVOD_ELASTIC=1 needs HVD_ELASTIC_GENERATION, a "
                             f"count from 0, not {generation!r}: {_LAUNCH_HINT}")
        state_dir = os.environ.get("HVD_ELASTIC_STATE_DIR", "")
        if not state_dir:
            raise ValueError(f"hvd.elastic: HOROVOD_ELASTIC=1 needs HVD_ELASTIC_STATE_DIR: "
                             f"{_LAUNCH_HINT}")
        driver = os.environ.get("HVD_ELASTIC_DRIVER", "")
        token = os.environ.get("HVD_ELASTIC_TOKEN", "")
        if driver and not token:
            raise ValueError("hvd.elastic: HVD_ELASTIC_DRIVER is set without "
                             f"HVD_ELASTIC_TOKEN: {_LAUNCH_HINT}")
        return cls(int(generation), state_dir, driver, token)

    # Notifications (rank 0).

    def register(self, state):
        """state.on_hosts_updated(timestamp, result) is called for each change of hosts
        hvdrun announces, those announced before it registered included."""
        with self._lock:
            if state not in self._listeners:
                self._listeners.append(state)
                for update in self._updates:
                    state.on_hosts_updated(*update)
            driver, self._driver = self._driver, None
        if driver is not None:
            driver.start()  # once listeners exist: hvdrun repeats a change to a late comer

    def unregister(self, state):
        with self._lock:
            if state in self._listeners:
                self._listeners.remove(state)

    def _deliver(self, timestamp, result):
        with self._lock:
            self._updates.append((timestamp, result))
            for state in list(self._listeners):
                state.on_hosts_updated(timestamp, result)

    def agree_on_host_updates(self, values):
        """Rank 0's `values` on every rank. Each check has its own name, so ranks that
        check a different number of times (one rank committed, another did not) meet
        different names: the stall inspector fails both after
        HOROVOD_STALL_CHECK_TIME_SECONDS, an error on every rank, not a hang."""
        name = self._next_check_name()
        self._checks += 1
        return objects.broadcast_object(values, 0, name=name)

    def _next_check_name(self):
        return f"hvd.elastic.host_updates.{self._checks}"

    # The committed state.

    def persist(self, state, then=None):
        """Writes `state`'s saved values as the next commit to this local rank's file.
        When that fails (a value that cannot be pickled, a full tmpfs), the collective
        the peers make next, `then` = (op, name) (the check of hosts after a commit by
        default), fails on their side with this rank's reason, rather than waiting."""
        op, name = then or ("broadcast", f"{self._next_check_name()}.size")
        try:
            payload = state.state_bytes()
            number = self.commit_number + 1
            self.store.write(basics.local_rank(), number, payload)
        except Exception as error:
            refuse(op, name, None, f"rank {basics.rank()} could not save commit "
                   f"{self.commit_number + 1} of the elastic state: {error}")
            raise
        self.commit_number = number

    def restore_newest(self, state):
        """Loads the newest commit found in any node's state directory into `state` on
        every rank and returns True; False (and nothing changed) when there is none.
        The lowest rank holding it broadcasts its bytes, so a new host gets the state
        over MPI."""
        found = self.store.newest()
        mine = found[0] if found is not None else 0
        newest = _allreduce_int(mine, basics.Max, SYNC_NEWEST)
        if newest == 0:
            return False
        rank, size = basics.rank(), basics.size()
        holder = _allreduce_int(rank if mine == newest else size, basics.Min,
                                "hvd.elastic.sync.holder")
        payload = _broadcast_bytes(found[1] if rank == holder else None, holder,
                                   "hvd.elastic.sync.state")
        state.load_state_bytes(payload)
        self.commit_number = newest
        self.restored_from = (newest, holder)
        return True

    def leave_for_new_hosts(self, state):
        """Persists the current state (nothing rolled back) and waits until every rank
        has, so that ending the generation cannot cut a rank's write short."""
        finished = "hvd.elastic.interrupted"
        state.save()
        self.persist(state, then=("allreduce", finished))
        _allreduce_int(0, basics.Sum, finished)

    def finish(self):
        """The training function returned on every rank: the node's state files go
        (local rank 0's task). Not before every rank returned: a rank that still fails
        needs them."""
        _allreduce_int(0, basics.Sum, "hvd.elastic.finished")
        if basics.local_rank() == 0:
            self.store.remove_all()


def _publish_topology():
    """Horovod's per-rank variables, for scripts and libraries that read them."""
    os.environ["HOROVOD_RANK"] = str(basics.rank())
    os.environ["HOROVOD_SIZE"] = str(basics.size())
    os.environ["HOROVOD_LOCAL_RANK"] = str(basics.local_rank())
    os.environ["HOROVOD_LOCAL_SIZE"] = str(basics.local_size())
    os.environ["HOROVOD_CROSS_RANK"] = str(basics.cross_rank())
    os.environ["HOROVOD_CROSS_SIZE"] = str(basics.cross_size())
    if not os.environ.get("HOROVOD_HOSTNAME"):
        os.environ["HOROVOD_HOSTNAME"] = socket.gethostname()


def _allreduce_int(value, op, name):
    return int(collectives.allreduce(np.array([value], dtype=np.int64), op=op, name=name)[0])


def _broadcast_bytes(payload, root_rank, name):
    is_root = basics.rank() == root_rank
    length = np.array([len(payload) if is_root else 0], dtype=np.int64)
    collectives.broadcast_(length, root_rank, f"{name}.size")
    data = (np.frombuffer(payload, dtype=np.uint8).copy() if is_root
            else np.empty(int(length[0]), dtype=np.uint8))
    collectives.broadcast_(data, root_rank, f"{name}.data")
    return payload if is_root else data.tobytes()
