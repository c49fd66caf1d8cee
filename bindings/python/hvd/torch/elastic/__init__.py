"""Horovod's elastic API for PyTorch (hvd.elastic.run, TorchState, ElasticSampler):
see hvd.elastic for how it runs, in an elastic job launched by hvdrun or in a job of
fixed size.

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    train(state)
"""
from ...elastic import HostsUpdatedInterrupt, ObjectState, State, run_fn  # noqa: F401
from .sampler import ElasticSampler
from .state import TorchState

__all__ = ["run", "TorchState", "ElasticSampler"]


def run(func):
    """Decorates a training function of a state: in an elastic job the state is
    restored from the newest commit (or rank 0's) and a change of hosts or a failed
    collective ends the generation (hvd.elastic.run_fn); in a job of fixed size the
    state is synchronized from rank 0 and a failed collective restores the last commit
    and is raised."""
    return run_fn(func)
