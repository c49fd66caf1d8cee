"""hvd.torch.elastic (horovod.torch.elastic) in a job of fixed size: TorchState's
sync, commit and restore; ElasticSampler's shares and counts; run's sync before the
training function and its restore-and-raise after a failed collective."""
import os
import random
import tempfile

import pytest

torch = pytest.importorskip("torch")
import hvd.torch as hvd  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")


def model_of(value):
    model = torch.nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.fill_(value)
        model.bias.fill_(value)
    return model


def weights(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()


def test_sync_takes_rank_zeros_state_and_commits_it():
    rank = hvd.rank()
    model = model_of(1.0 + rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * (rank + 1), momentum=0.9)
    state = hvd.elastic.TorchState(model, optimizer, epoch=10 + rank, batch=rank)
    state.sync()
    assert weights(model) == [1.0, 1.0, 1.0]
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.1)
    assert (state.epoch, state.batch) == (10, 0)
    # After sync the synchronized state is the committed one.
    with torch.no_grad():
        model.weight.fill_(7.0)
    state.epoch = 99
    state.restore()
    assert weights(model) == [1.0, 1.0, 1.0] and state.epoch == 10


def test_commit_then_restore():
    model = model_of(2.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, epoch=0)
    assert state.model is model and state.optimizer is optimizer
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()  # momentum buffers appear in the optimizer's state
    state.epoch = 3
    state.commit()
    committed = weights(model)
    momentum = optimizer.state_dict()["state"][0]["momentum_buffer"].clone()
    optimizer.step()
    state.epoch = 4
    assert weights(model) != committed
    state.restore()
    assert weights(model) == committed and state.epoch == 3
    assert torch.equal(optimizer.state_dict()["state"][0]["momentum_buffer"], momentum)


def test_a_replaced_model_is_the_one_saved():
    state = hvd.elastic.TorchState(model_of(1.0), epoch=0)
    replacement = model_of(5.0)
    state.model = replacement  # saved as it is assigned
    with torch.no_grad():
        replacement.weight.fill_(6.0)
    state.restore()
    assert state.model is replacement and weights(replacement) == [5.0, 5.0, 5.0]


def test_values_without_a_handler_are_plain_attributes():
    state = hvd.elastic.TorchState(epoch=1, note="x")
    assert state.model is None and state.optimizer is None
    state.note = "y"
    state.restore()
    assert state.note == "x"


class Numbers(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def test_sampler_deals_one_permutation_to_the_ranks():
    size, rank = hvd.size(), hvd.rank()
    n = 10 * size + 3  # not a multiple: the last share is filled from the start
    sampler = hvd.elastic.ElasticSampler(Numbers(n), shuffle=True, seed=5)
    sampler.set_epoch(2)
    order = list(range(n))
    random.Random(5 + 2).shuffle(order)  # Horovod 0.28's order of the epoch
    per_rank = -(-n // size)
    padded = order + order[:per_rank * size - n]
    mine = list(sampler)
    assert len(sampler) == per_rank and mine == padded[rank::size]
    shares = hvd.allgather_object(mine, name="elastic.test.shares")
    assert sorted(i for share in shares for i in share) == sorted(padded)
    in_order = list(range(5)) + list(range(5))[:-(-5 // size) * size - 5]
    assert list(hvd.elastic.ElasticSampler(Numbers(5), shuffle=False)) == in_order[rank::size]


def test_sampler_counts_the_jobs_samples_and_resumes_from_a_commit():
    size = hvd.size()
    batch = 2
    sampler = hvd.elastic.ElasticSampler(Numbers(8 * size), shuffle=True)
    loader = torch.utils.data.DataLoader(Numbers(8 * size), batch_size=batch, sampler=sampler)
    state = hvd.elastic.TorchState(sampler=sampler)
    state.sync()
    for index, _ in enumerate(loader):
        sampler.record_batch(index, batch)
        assert sampler.processed_num == batch * size * (index + 1)
        if index == 1:
            state.commit()
            break
    seen_before = sampler.processed_num
    sampler.record_batch(2, batch)
    state.restore()
    assert sampler.processed_num == seen_before
    assert len(sampler) == (8 * size - seen_before) // size  # the rest of the epoch
    sampler.set_epoch(1)
    assert sampler.processed_num == 0 and len(sampler) == 8


def test_sampler_sync_takes_rank_zeros_count():
    sampler = hvd.elastic.ElasticSampler(Numbers(8 * hvd.size()))
    state = hvd.elastic.TorchState(sampler=sampler)
    sampler.set_epoch(4 + hvd.rank())
    sampler.record_batch(0, 1 + hvd.rank())
    state.sync()
    assert sampler.epoch == 4 and sampler.processed_num == hvd.size()


def test_run_syncs_then_calls_the_function():
    state = hvd.elastic.TorchState(model_of(3.0 + hvd.rank()), epoch=hvd.rank())

    @hvd.elastic.run
    def train(state, extra):
        return weights(state.model), state.epoch, extra

    assert train(state, "x") == ([3.0, 3.0, 3.0], 0, "x")


def test_run_restores_and_raises_a_failed_collective_on_every_rank():
    if hvd.size() < 2:
        pytest.skip("a disagreement needs two ranks")
    state = hvd.elastic.TorchState(model_of(1.0), epoch=0)

    @hvd.elastic.run
    def train(state):
        state.epoch = 1
        state.commit()
        state.epoch = 2
        with torch.no_grad():
            state.model.weight.fill_(9.0)
        # Ranks disagree on the shape: an error on every rank, no hang.
        hvd.allreduce(torch.ones(1 + hvd.rank()), name="elastic.test.mismatch")

    with pytest.raises(hvd.HorovodInternalError):
        train(state)
    assert state.epoch == 1 and weights(state.model) == [1.0, 1.0, 1.0]


def test_horovod_names():
    import horovod.common.elastic as common_elastic
    import horovod.torch as horovod_torch
    import horovod.torch.elastic as torch_elastic
    from horovod.torch.elastic.sampler import ElasticSampler
    from horovod.torch.elastic.state import ObjectState, TorchState

    assert horovod_torch.elastic is torch_elastic
    assert torch_elastic.run is hvd.elastic.run and TorchState is hvd.elastic.TorchState
    assert ElasticSampler is hvd.elastic.ElasticSampler
    assert issubclass(TorchState, ObjectState) and ObjectState is common_elastic.ObjectState
    state = common_elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=hvd.rank())
    state.sync()
    assert state.step == 0


def test_without_an_elastic_launch_nothing_is_persisted_or_checked(monkeypatch):
    """Launched without HOROVOD_ELASTIC (hvdrun without elastic flags, mpiexec), run
    behaves as before: no state directory, and check_host_updates is no collective (a
    rank checking alone does not wait for the others)."""
    parent = tempfile.mkdtemp() if hvd.rank() == 0 else None
    directory = hvd.broadcast_object(os.path.join(str(parent), "state"), name="elastic.test.dir")
    monkeypatch.delenv("HOROVOD_ELASTIC", raising=False)
    monkeypatch.setenv("HVD_ELASTIC_STATE_DIR", directory)
    state = hvd.elastic.TorchState(model_of(1.0), epoch=0)

    @hvd.elastic.run
    def train(state):
        state.epoch = 1
        state.commit()
        if hvd.rank() == 0:
            state.check_host_updates()
        return state.epoch

    assert train(state) == 1 and state._session is None
    assert not os.path.exists(directory)
    assert hvd.allreduce(torch.ones(1), name="elastic.test.after").item() == 1.0
    if hvd.rank() == 0:
        os.rmdir(parent)
