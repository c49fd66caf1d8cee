"""hvd.elastic.run: runs the training function of a state, as Horovod's elastic
run does, in one generation of an elastic job or in a job of fixed size."""
import functools
import sys

from .. import basics
from ..errors import HvdError
from . import _session
from ._host_update import HostsUpdatedInterrupt

# The statuses a worker of an elastic job ends its generation with (hvdrun reads them).
EXIT_HOSTS_UPDATED = 75  # EX_TEMPFAIL: the state is saved, start the next generation
EXIT_PEER_FAILED = 76    # a collective failed: the last commit is in the state files


def run_fn(func, reset=None):
    """Wraps func(state, ...) as Horovod's elastic run.

    Launched by hvdrun as an elastic job (HOROVOD_ELASTIC=1), each generation is an
    MPI job of its own: a generation after the first calls the state's reset callbacks,
    then the state is synchronized (the newest commit of any node, or rank 0's state
    when nothing was committed yet) and func runs. func's return ends the job: the
    node's state files are removed and its value returned. A change of hosts
    (HostsUpdatedInterrupt) saves and persists the current state and ends the
    generation with status 75; a failed collective (HorovodInternalError) ends it with
    status 76, the next generation starting from the last commit.

    Otherwise (a job of fixed size) the state is synchronized once from rank 0 and
    func runs; a failed collective restores the last commit and is raised: no reset
    can heal it (a rank that died stays dead, ranks that disagree would disagree
    again), where retrying as Horovod's elastic mode does would repeat the failure for
    ever. reset (Horovod's shutdown-and-init between attempts) is accepted and never
    called: a generation is a fresh process."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        session = _session.current()
        if session is None:
            return _run_once(func, state, args, kwargs)
        return _run_generation(session, func, state, args, kwargs)

    return wrapper


def _run_once(func, state, args, kwargs):
    state.sync()
    try:
        return func(state, *args, **kwargs)
    except HvdError:
        state.restore()
        raise


def _run_generation(session, func, state, args, kwargs):
    state._session = session
    try:
        try:
            # The reset (Horovod's on_reset empties the state's queue of host news)
            # before the state listens to hvdrun: news that arrives meanwhile belongs to
            # this generation and must reach its first check.
            if session.generation > 0:
                state.on_reset()
            session.register(state)
            state.sync()
            result = func(state, *args, **kwargs)
            session.finish()
            return result
        except HostsUpdatedInterrupt:
            session.leave_for_new_hosts(state)
            basics.shutdown()
            raise SystemExit(EXIT_HOSTS_UPDATED) from None
    except HvdError as error:
        sys.stderr.write(
            f"hvd.elastic: rank {basics.rank()}: a collective failed ({error}); this "
            f"generation ends (status {EXIT_PEER_FAILED}) and the next one starts from "
            f"commit {session.commit_number}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_PEER_FAILED) from None
    finally:
        session.unregister(state)
        state._session = None
