"""Async handles: completion in any order, polling, many in flight, several threads."""
import threading

import numpy as np
import pytest

import hvd
from timeouts import scaled

pytestmark = pytest.mark.usefixtures("world")


def test_names_issued_and_waited_in_different_orders_per_rank():
    names = [f"order.{i}" for i in range(12)]
    issue = names if hvd.rank() % 2 == 0 else list(reversed(names))
    handles = {n: hvd.allreduce_async(np.full(50, float(names.index(n)), np.float32),
                                      op=hvd.Sum, name=n) for n in issue}
    rng = np.random.default_rng(hvd.rank())
    for n in rng.permutation(names):
        out = hvd.synchronize(handles[n])
        np.testing.assert_array_equal(out, np.full(50, names.index(n) * hvd.size(), np.float32))


def test_poll_reports_pending_then_done():
    # The others enqueue "poll.late" only after rank 0 has seen it pending.
    if hvd.rank() == 0:
        h = hvd.allreduce_async(np.ones(3), op=hvd.Sum, name="poll.late")
        assert not hvd.poll(h)
        hvd.broadcast(np.ones(1), 0, name="poll.go")
    else:
        hvd.broadcast(np.ones(1), 0, name="poll.go")
        h = hvd.allreduce_async(np.ones(3), op=hvd.Sum, name="poll.late")
    out = hvd.synchronize(h)
    assert hvd.poll(h)
    np.testing.assert_array_equal(out, np.full(3, float(hvd.size())))
    assert hvd.synchronize(h) is out  # waiting again returns the same result


def test_many_in_flight_mixed_ops():
    handles = []
    for i in range(100):
        handles.append(("sum", i, hvd.allreduce_async(np.full(i + 1, 1.0), op=hvd.Sum,
                                                      name=f"many.{i}")))
        handles.append(("bcast", i, hvd.broadcast_async(np.full(3, float(hvd.rank() + i)),
                                                        root_rank=0, name=f"many.b.{i}")))
    for kind, i, h in reversed(handles):
        out = h.wait()
        if kind == "sum":
            np.testing.assert_array_equal(out, np.full(i + 1, float(hvd.size())))
        else:
            np.testing.assert_array_equal(out, np.full(3, float(i)))


def test_in_place_async_keeps_buffers_alive():
    handles = [hvd.allreduce_async_(np.full(1000, 2.0), op=hvd.Sum, name=f"alive.{i}")
               for i in range(10)]
    for h in handles:
        np.testing.assert_array_equal(h.wait(), np.full(1000, 2.0 * hvd.size()))


def test_from_several_threads():
    errors, results = [], {}

    def worker(t):
        try:
            for i in range(20):
                name = f"thread.{t}.{i}"
                results[name] = hvd.allreduce(np.full(8, float(t + i)), op=hvd.Sum, name=name)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=scaled(120))
    assert not errors and not any(th.is_alive() for th in threads)
    for t in range(3):
        for i in range(20):
            np.testing.assert_array_equal(results[f"thread.{t}.{i}"],
                                          np.full(8, float(t + i) * hvd.size()))


def test_name_stays_taken_until_the_handle_is_synchronized():
    first = hvd.allreduce_async(np.ones(4), op=hvd.Sum, name="taken")
    # Completed or not in the library, the operation is pending here until waited for:
    # reusing its name fails on every rank, every time.
    with pytest.raises(hvd.DuplicateNameError) as info:
        hvd.allreduce_async(np.ones(4), op=hvd.Sum, name="taken")
    assert "synchronized" in str(info.value) and isinstance(info.value, ValueError)
    np.testing.assert_array_equal(first.wait(), np.full(4, float(hvd.size())))
    again = hvd.allreduce_async(np.ones(4), op=hvd.Sum, name="taken")
    np.testing.assert_array_equal(again.wait(), np.full(4, float(hvd.size())))
