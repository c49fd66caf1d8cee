"""Async handles dropped, kept, waited twice or after shutdown: the operation's buffers
stay valid until libhvd is done with them, whatever Python does with the Handle.

Thousands of fire-and-forget operations run while a thread churns the garbage
collector, so a buffer freed too early is reused at once (and, in the ASan build,
reported as a use after free)."""
import gc
import threading

import numpy as np
import pytest

import hvd
from timeouts import scaled

torch = pytest.importorskip("torch")
import hvd.torch as hvd_torch  # noqa: E402

DROPS = 2000


@pytest.fixture(scope="module")
def session():
    hvd.init()
    yield
    hvd.shutdown()


@pytest.fixture
def gc_churn():
    """A thread that allocates cyclic garbage and collects it, until the test ends."""
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            junk = [[np.empty(64)] for _ in range(200)]
            for pair in junk:
                pair.append(pair)  # cycles: only the collector frees them
            del junk
            gc.collect()
    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=scaled(60))
    assert not thread.is_alive()


def settle(tag):
    """A blocking collective after the fire-and-forget ones: when it returns on every
    rank, every earlier operation has been negotiated; then reap what was dropped."""
    out = hvd.allreduce(np.ones(1), op=hvd.Sum, name=f"settle.{tag}")
    assert out[0] == hvd.size()


def test_dropped_numpy_handles(session, gc_churn):
    for i in range(DROPS):
        # The temporary array is referenced by nothing but the operation.
        hvd.allreduce_async(np.full(1000, float(i), np.float32), op=hvd.Sum, name=f"np.drop.{i}")
        if i % 3 == 0:
            hvd.allgather_async(np.full((2, 3), i, np.int32), name=f"np.gather.drop.{i}")
    settle("np")
    # Every dropped operation is reaped by a later enqueue once it has completed.
    checked = hvd.allreduce(np.full(7, 3.0), op=hvd.Sum, name="np.after")
    np.testing.assert_array_equal(checked, np.full(7, 3.0 * hvd.size()))
    assert hvd._raw.in_flight() <= DROPS  # bounded: not every handle stays forever


def test_dropped_torch_handles(session, gc_churn):
    for i in range(DROPS):
        hvd_torch.allreduce_async(torch.full((500,), float(i)), op=hvd.Sum,
                                  name=f"torch.drop.{i}")
        if i % 4 == 0:
            hvd_torch.broadcast_async_(torch.full((9,), float(hvd.rank())), root_rank=0,
                                       name=f"torch.bcast.drop.{i}")
    settle("torch")


def test_kept_handles_waited_out_of_order_and_twice(session, gc_churn):
    handles = [hvd.allreduce_async(np.full(300, float(i)), op=hvd.Sum, name=f"keep.{i}")
               for i in range(DROPS // 4)]
    for i in reversed(range(0, len(handles), 2)):  # half of them, backwards
        first = handles[i].wait()
        assert handles[i].wait() is first
        np.testing.assert_array_equal(first, np.full(300, float(i * hvd.size())))
    del handles  # the other half is dropped unwaited
    settle("keep")


def test_threads_waiting_on_one_handle_get_one_result(session):
    # Rank 0 enqueues late, so every waiter below is inside its wait at once: one of
    # them completes the operation, the others wait for it to, none calls libhvd with
    # a handle already freed.
    import time
    for trial in range(3):
        if hvd.rank() == 0:
            time.sleep(0.2)
        h = hvd_torch.allreduce_async(torch.full((64,), 1.0), op=hvd.Sum,
                                      name=f"shared.wait.{trial}")
        results, errors = [], []

        def wait():
            try:
                results.append(h.wait())
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        waiters = [threading.Thread(target=wait) for _ in range(4)]
        for w in waiters:
            w.start()
        polls = [h.poll() for _ in range(50)]  # never an error while others wait
        for w in waiters:
            w.join(timeout=scaled(60))
        assert not errors and len(results) == 4
        assert all(r is results[0] for r in results) and h.poll()
        assert torch.equal(results[0], torch.full((64,), float(hvd.size())))
        assert all(isinstance(p, bool) for p in polls)


def test_reaped_handles_are_released(session):
    for i in range(200):
        hvd.allreduce_async(np.ones(10), name=f"release.{i}")
    settle("release")
    gc.collect()
    hvd._raw.reap_dropped(block=True)  # every rank enqueued them all: each completes
    assert hvd._raw.in_flight() == 0


def test_wait_after_shutdown(session):
    if hvd.size() > 1 and hvd.rank() == 0:
        # Nobody else submits this name: shutdown completes it with an error.
        kept = hvd.allreduce_async(np.ones(5), name="never.matched")
        hvd.allreduce_async(np.ones(5), name="never.matched.dropped")
    else:
        kept = None
    settle("before.shutdown")
    hvd.shutdown()
    assert hvd._raw.in_flight() == 0  # shutdown released every operation
    if kept is not None:
        for _ in range(2):  # every wait reports the shutdown, without calling into C
            with pytest.raises(hvd.ShutDownError):
                kept.wait()
        assert kept.poll()
