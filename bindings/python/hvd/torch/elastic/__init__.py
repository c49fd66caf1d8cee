"""Horovod's elastic API for PyTorch (hvd.elastic.run, TorchState, ElasticSampler), for
jobs of a fixed size: see hvd.elastic for what it does and does not do.

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    train(state)
"""
from ...elastic import run_fn
from .sampler import ElasticSampler
from .state import TorchState

__all__ = ["run", "TorchState", "ElasticSampler"]


def run(func):
    """Decorates a training function of a state: the state is synchronized from rank 0
    before it runs; a failed collective restores the last commit and is raised."""
    return run_fn(func)
