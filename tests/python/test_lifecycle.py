"""Life cycle without the session fixture: before init, shutdown with work pending,
init again."""
import numpy as np
import pytest

import hvd


def test_before_init_raises_not_initialized():
    assert not hvd.is_initialized()
    with pytest.raises(hvd.NotInitializedError):
        hvd.rank()
    # Horovod's rank(), size()... raise ValueError before init, its collectives a
    # RuntimeError (HorovodInternalError): handlers for either catch it.
    for query in (hvd.rank, hvd.size, hvd.local_rank, hvd.local_size, hvd.cross_rank,
                  hvd.cross_size, hvd.global_process_set.rank):
        with pytest.raises(ValueError) as info:
            query()
        assert isinstance(info.value, RuntimeError), query
    with pytest.raises(hvd.NotInitializedError) as info:
        hvd.allreduce(np.ones(2), name="early")
    assert info.value.status == 1 and "hvd.init()" in str(info.value)
    assert "hvd.allreduce()" in str(info.value) and "hvd_" not in str(info.value)


def test_shutdown_fails_pending_work_then_init_again():
    hvd.init()
    size = hvd.size()
    pending = None
    if hvd.rank() == 0:
        # Nobody else submits this name: shutdown must complete it with an error.
        pending = hvd.allreduce_async(np.ones(2), name="orphan")
    # Meet once the orphan is enqueued: a rank that shut down first would make rank
    # 0's enqueue itself fail (the job is shut down), not the pending wait.
    hvd.allreduce(np.ones(1), name="orphan.enqueued")
    hvd.shutdown()
    if pending is not None:
        with pytest.raises(hvd.ShutDownError):
            pending.wait()
    assert not hvd.is_initialized()
    hvd.shutdown()  # harmless when not initialized
    hvd.init()
    assert hvd.size() == size
    out = hvd.allreduce(np.ones(2), op=hvd.Sum, name="again")
    np.testing.assert_array_equal(out, np.full(2, float(size)))
    hvd.shutdown()


def test_init_with_static_process_sets():
    # The set's ranks depend on the size, learned from a first init.
    hvd.init()
    size = hvd.size()
    hvd.shutdown()
    evens = hvd.ProcessSet([r for r in range(size) if r % 2 == 0])
    hvd.init(process_sets=[evens])
    assert evens.process_set_id == 1 and hvd.process_set_ranks(evens) == evens.ranks
    if evens.included():
        out = hvd.allreduce(np.array([hvd.rank()]), op=hvd.Sum, name="evens",
                            process_set=evens)
        assert out[0] == sum(evens.ranks)
    # A rank that shuts down early would fail the others' work: meet first.
    hvd.allreduce(np.ones(1), name="evens.done")
    hvd.shutdown()


def _steps_of_named_allreduces(tensors, steps):
    for _ in range(steps):
        handles = [hvd.allreduce_async(np.ones(4), op=hvd.Sum, name=f"churn.{t}")
                   for t in range(tensors)]
        for h in handles:
            np.testing.assert_array_equal(h.wait(), np.full(4, float(hvd.size())))


@pytest.mark.parametrize("capacity, warned", [(8, True), (64, False)])
def test_a_response_cache_smaller_than_a_step_is_reported(capfd, monkeypatch, capacity, warned):
    # 20 tensors a step: more than 8 slots hold, so each is evicted before it comes
    # back and negotiated by name every step; 64 slots hold them all.
    monkeypatch.setenv("HOROVOD_CACHE_CAPACITY", str(capacity))
    hvd.init()
    capfd.readouterr()
    _steps_of_named_allreduces(tensors=20, steps=4)
    hvd.allreduce(np.ones(1), name="churn.done")  # every rank's log is written by now
    err = capfd.readouterr().err
    rank = hvd.rank()
    hvd.shutdown()
    told = err.count("the response cache holds")
    # Once, on rank 0 only, naming the setting and the cache's size.
    assert told == (1 if warned and rank == 0 else 0), err
    if told:
        assert f"holds {capacity} tensors (HOROVOD_CACHE_CAPACITY)" in err
        assert "Set HOROVOD_CACHE_CAPACITY above the number of tensors" in err
