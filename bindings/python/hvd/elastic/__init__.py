"""Horovod's elastic API: training that goes on when hosts come and go.

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

Launched by hvdrun as an elastic job (HOROVOD_ELASTIC=1), the job is a sequence of
generations, each an MPI job of fixed size: the committed state survives in a file
per local rank under HVD_ELASTIC_STATE_DIR, the next generation restores the newest
commit on every rank, and a change of hosts that hvdrun announces ends the generation
at the same step on every rank (HostsUpdatedInterrupt). Launched otherwise, the job
keeps its ranks from start to end and the state lives in memory, as under Horovod
without elastic flags. docs/elastic.md says what survives and how to write a script.

The framework's module gives the state class: hvd.torch.elastic.TorchState,
hvd.tensorflow.elastic.TensorFlowState, hvd.keras.elastic.KerasState; here are the
framework-free ones (State, ObjectState) and run for them.
"""
from ..errors import HvdError as HorovodInternalError
from ._host_update import HostsUpdatedInterrupt, HostUpdateResult
from ._run import EXIT_HOSTS_UPDATED, EXIT_PEER_FAILED, run_fn
from ._session import elastic_launch
from ._state import ObjectState, State

__all__ = ["run", "run_fn", "State", "ObjectState", "HostsUpdatedInterrupt",
           "HorovodInternalError", "HostUpdateResult", "elastic_launch",
           "EXIT_HOSTS_UPDATED", "EXIT_PEER_FAILED"]


def run(func):
    """Decorates a training function of a state (see run_fn)."""
    return run_fn(func)
