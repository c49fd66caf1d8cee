"""The per-call path in C (hvd._fastpath) against the ctypes path: the same results,
the same errors, the GIL released while waiting, bad arguments refused.

Each check runs twice in one job, once through each path (the `path` fixture swaps
hvd._raw.fast), on the same library: the paths must not differ in anything a caller
sees but speed."""
import os
import threading
import time

import numpy as np
import pytest
import torch

import hvd
import hvd.torch as ht
from hvd import _raw
from hvd._fastcall import fast

pytestmark = pytest.mark.usefixtures("world")


def test_the_fast_path_is_in_use_where_it_was_built():
    # meson sets HVD_EXPECT_FASTPATH when it built the extension; a build that
    # silently fell back to ctypes would otherwise pass every other test, slowly.
    if os.environ.get("HVD_EXPECT_FASTPATH") != "1":
        pytest.skip("the extension was not built (no Python headers)")
    assert fast is not None
    assert _raw.fast is fast


@pytest.fixture(params=["fast", "ctypes"])
def path(request, monkeypatch):
    if request.param == "fast" and fast is None:
        pytest.skip("hvd._fastpath is not available")
    if request.param == "ctypes":
        monkeypatch.setattr(_raw, "fast", None)
    return request.param


def test_allreduce_and_broadcast_results(path):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4) + hvd.rank()
    out = ht.allreduce(t, op=ht.Sum, name=f"fp.sum.{path}")
    expected = torch.arange(12, dtype=torch.float32).reshape(3, 4) * hvd.size() \
        + sum(range(hvd.size()))
    assert torch.equal(out, expected)
    scaled = ht.allreduce(t, op=ht.Sum, name=f"fp.scaled.{path}", prescale_factor=0.5,
                          postscale_factor=4.0)
    assert torch.allclose(scaled, expected * 2.0)
    b = torch.full((5,), float(hvd.rank()), dtype=torch.float64)
    ht.broadcast_(b, root_rank=hvd.size() - 1, name=f"fp.bcast.{path}")
    assert torch.equal(b, torch.full((5,), float(hvd.size() - 1), dtype=torch.float64))
    a = np.full(7, hvd.rank() + 1, np.int32)
    hvd.allreduce_(a, op=hvd.Max, name=f"fp.np.{path}")
    np.testing.assert_array_equal(a, np.full(7, hvd.size(), np.int32))


def test_grouped_allreduce(path):
    group = [torch.full((3,), float(hvd.rank())), torch.arange(5, dtype=torch.float32),
             torch.ones(2, 2) * (hvd.rank() + 1)]
    out = ht.grouped_allreduce(group, op=ht.Sum, name=f"fp.group.{path}")
    total = float(sum(range(hvd.size())))
    assert torch.equal(out[0], torch.full((3,), total))
    assert torch.equal(out[1], torch.arange(5, dtype=torch.float32) * hvd.size())
    assert torch.equal(out[2], torch.ones(2, 2) * (total + hvd.size()))
    inplace = [torch.ones(4, dtype=torch.float64), torch.ones(1, dtype=torch.float64)]
    ht.grouped_allreduce_(inplace, op=ht.Average, name=f"fp.group_.{path}",
                          postscale_factor=3.0)
    assert torch.equal(inplace[0], torch.full((4,), 3.0, dtype=torch.float64))
    # A group of one compares its shape, as a lone allreduce does.
    shape = (2, 3) if hvd.rank() == 0 else (3, 2)
    with pytest.raises(hvd.MismatchError, match="shape"):
        ht.grouped_allreduce([torch.ones(shape)], name=f"fp.group1.{path}")


def test_scalars_and_very_many_dimensions(path):
    scalar = ht.allreduce(torch.tensor(2.0), op=ht.Sum, name=f"fp.scalar.{path}")
    assert scalar.shape == () and scalar.item() == 2.0 * hvd.size()
    # More dimensions than libhvd describes: compared by element count only.
    deep = torch.ones((1,) * 40)
    out = ht.allreduce(deep, op=ht.Sum, name=f"fp.deep.{path}")
    assert out.shape == deep.shape and out.item() == hvd.size()


def test_shape_mismatch_is_an_error_on_every_rank(path):
    shape = (2, 3) if hvd.rank() == 0 else (3, 2)
    with pytest.raises(hvd.MismatchError, match="shape"):
        ht.allreduce(torch.ones(shape), name=f"fp.shape.{path}")


def test_pending_name_is_refused(path):
    h = ht.allreduce_async(torch.ones(3), name=f"fp.dup.{path}")
    with pytest.raises(hvd.DuplicateNameError, match=f"fp.dup.{path}"):
        ht.allreduce_async(torch.ones(3), name=f"fp.dup.{path}")
    ht.synchronize(h)


def test_library_refusal_carries_its_message(path):
    # A negative root is refused by libhvd itself (not by Python), on every rank.
    with pytest.raises(hvd.InvalidArgumentError, match="root"):
        ht.broadcast_(torch.ones(2), root_rank=-1, name=f"fp.root.{path}")
    with pytest.raises(hvd.InvalidArgumentError):
        ht.allreduce(torch.ones(2), name=f"fp.ps.{path}", process_set=12345)


def test_poll_then_wait(path):
    # The others enqueue only after rank 0 saw its handle pending.
    name = f"fp.poll.{path}"
    if hvd.rank() == 0:
        h = ht.allreduce_async_(torch.ones(4), op=ht.Sum, name=name)
        assert not ht.poll(h)
        ht.broadcast_(torch.ones(1), 0, name=f"fp.go.{path}")
    else:
        ht.broadcast_(torch.ones(1), 0, name=f"fp.go.{path}")
        h = ht.allreduce_async_(torch.ones(4), op=ht.Sum, name=name)
    assert torch.equal(ht.synchronize(h), torch.full((4,), float(hvd.size())))
    assert ht.poll(h)


def test_other_threads_run_while_a_rank_waits(path):
    # Rank 0 enqueues late; meanwhile the others wait, and a thread of theirs must get
    # the interpreter: the wait releases the GIL.
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    if hvd.rank() == 0:
        time.sleep(0.4)
    h = ht.allreduce_async(torch.ones(2), name=f"fp.gil.{path}")
    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        ht.synchronize(h)
    finally:
        stop.set()
        ticker.join()
    if hvd.rank() != 0:
        assert len(ticks) >= 20


@pytest.mark.skipif(fast is None, reason="hvd._fastpath is not available")
def test_wrong_arguments_raise_instead_of_crashing():
    t = torch.ones(3)
    p = t.data_ptr()
    tail = (t, None, t)  # keepalive, finish, result
    with pytest.raises(TypeError):
        fast.allreduce(p, p, 3, 8, 1, b"x", 1.0, 1.0, -1, 0, None, None)  # 12 arguments
    with pytest.raises(TypeError):
        fast.allreduce(p, p, 3, 8, 1, b"x", 1.0, 1.0, -1, 0, None, ["a"], *tail)
    with pytest.raises(TypeError):
        fast.allreduce(p, p, 3, 8, 1, b"x", 1.0, 1.0, -1, 0, None, 7, *tail)
    with pytest.raises(TypeError):
        fast.allreduce(p, p, "3", 8, 1, b"x", 1.0, 1.0, -1, 0, None, None, *tail)
    with pytest.raises(TypeError):
        fast.broadcast(p, 3, 8, 0, b"x", -1, 0, "stream", None, *tail)
    with pytest.raises(TypeError):
        fast.wait("handle")
    with pytest.raises(ValueError, match="one length"):
        fast.grouped_allreduce([p, p], [p], [3, 3], 8, 1, b"g", 1.0, 1.0, -1, 0, None, None,
                               *tail)
    with pytest.raises(TypeError):
        fast.grouped_allreduce(p, [p], [3], 8, 1, b"g", 1.0, 1.0, -1, 0, None, None, *tail)
    with pytest.raises(TypeError):
        fast.grouped_allreduce([p], [p], ["three"], 8, 1, b"g", 1.0, 1.0, -1, 0, None, None,
                               *tail)
    # An unknown handle is libhvd's error, returned as a negative status.
    assert fast.wait(123456789) == 2  # HVD_ERR_INVALID_ARGUMENT
    assert fast.poll(123456789) == -2
    # No argument error left a name claimed or an operation registered.
    assert not fast.name_taken((0, b"x")) and not fast.name_taken((0, b"g"))


@pytest.mark.skipif(fast is None, reason="hvd._fastpath is not available")
def test_names_of_any_type_are_encoded_as_python_does():
    # str and bytes alike, anything else through str(): the same name on every rank.
    for name in ("fp.name.str", b"fp.name.bytes", 12345):
        out = ht.allreduce(torch.ones(2), op=ht.Sum, name=name)
        assert torch.equal(out, torch.full((2,), float(hvd.size())))
    h = ht.allreduce_async(torch.ones(2), name=777)
    with pytest.raises(hvd.DuplicateNameError, match="777"):
        ht.allreduce_async(torch.ones(2), name="777")
    ht.synchronize(h)


def test_handle_result_and_error_kept(path):
    # The in-place result is the tensor itself; a failed operation raises the same
    # error on every wait, and poll() says done.
    t = torch.ones(3)
    h = ht.allreduce_async_(t, op=ht.Sum, name=f"fp.same.{path}")
    assert ht.synchronize(h) is t and h.wait() is t
    shape = (2,) if hvd.rank() == 0 else (3,)
    bad = ht.allreduce_async(torch.ones(shape), name=f"fp.bad.{path}")
    with pytest.raises(hvd.MismatchError) as first:
        bad.wait()
    with pytest.raises(hvd.MismatchError) as second:
        bad.wait()
    assert first.value is second.value and bad.poll()
    assert "pending" not in repr(h) and f"{h.raw}" in repr(h)


def test_inplace_allreduce_of_every_kind_of_tensor(path):
    # The C path takes dense contiguous host tensors of libhvd's types and hands every
    # other case to the Python path: each kind gives the same result either way.
    n = hvd.size()
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    cases = {
        "contiguous": base.clone(),
        "parameter": torch.nn.Parameter(base.clone(), requires_grad=False),  # a subclass
        "strided": base.clone().t(),                # not contiguous: copied and back
        "int64": torch.arange(5, dtype=torch.int64),
        "float16": torch.ones(6, dtype=torch.float16),
        "scalar": torch.tensor(3.0),
    }
    for label, t in cases.items():
        expected = t.clone() * n
        out = ht.synchronize(ht.allreduce_async_(t, op=ht.Sum, name=f"fp.kind.{label}.{path}"))
        assert out is t and torch.equal(t, expected), label
    with pytest.raises(TypeError, match="element type"):
        ht.allreduce_async_(torch.ones(2, dtype=torch.complex64), name=f"fp.complex.{path}")
    with pytest.raises(TypeError, match="torch.Tensor"):
        ht.allreduce_async_(np.ones(2), name=f"fp.numpy.{path}")
    with pytest.raises(TypeError, match="sparse"):
        ht.allreduce_async_(torch.eye(2).to_sparse(), name=f"fp.sparse.{path}")
    # Averaged with scales, on the global set named explicitly.
    t = torch.full((4,), float(hvd.rank() + 1))
    ht.synchronize(ht.allreduce_async_(t, name=f"fp.avg.{path}", prescale_factor=2.0,
                                       postscale_factor=0.5, process_set=hvd.global_process_set))
    assert torch.allclose(t, torch.full((4,), (n + 1) / 2.0))


def test_inplace_allreduce_arguments_as_horovod_takes_them(path):
    # allreduce_async_ is a C function where hvd._fastpath was built: positional and
    # keyword arguments, process sets and scales of every accepted kind give what the
    # Python function gives, and wrong calls raise Python's own errors.
    n = hvd.size()
    calls = {
        "positional": lambda t, name: ht.allreduce_async_(t, None, name, ht.Sum),
        "keywords": lambda t, name: ht.allreduce_async_(tensor=t, op=ht.Sum, name=name),
        "average": lambda t, name: ht.allreduce_async_(t, average=False, name=name),
        "set id": lambda t, name: ht.allreduce_async_(t, name=name, op=ht.Sum, process_set=0),
        "int scales": lambda t, name: ht.allreduce_async_(t, name=name, op=ht.Sum,
                                                          prescale_factor=2,
                                                          postscale_factor=np.float64(0.5)),
    }
    for label, call in calls.items():
        t = torch.full((3, 2), float(hvd.rank() + 1))
        assert ht.synchronize(call(t, f"fp.args.{label}.{path}")) is t
        assert torch.equal(t, torch.full((3, 2), float(n * (n + 1) // 2))), label
    t = torch.ones(2)
    ht.synchronize(ht.allreduce_async_(t, name=f"fp.args.unnamed.{path}".encode()))
    assert torch.equal(t, torch.ones(2))  # averaged
    with pytest.raises(TypeError, match="nme"):
        ht.allreduce_async_(t, nme="fp.args.typo")
    with pytest.raises(TypeError, match="multiple values"):
        ht.allreduce_async_(t, None, "fp.args.twice", name="fp.args.twice")
    with pytest.raises(TypeError):
        ht.allreduce_async_(t, None, "fp.args.many", None, 1.0, 1.0, None, "one too many")
    with pytest.raises(TypeError):
        ht.allreduce_async_()
    with pytest.raises(hvd.InvalidArgumentError, match="op=True"):
        ht.allreduce_async_(t, name="fp.args.bool", op=True)
    with pytest.raises(hvd.InvalidArgumentError, match="op=99"):
        ht.allreduce_async_(t, name="fp.args.op", op=99)
    with pytest.raises(ValueError, match="average"):
        ht.allreduce_async_(t, name="fp.args.both", average=True, op=ht.Sum)
    with pytest.raises(TypeError, match="process_set"):
        ht.allreduce_async_(t, name="fp.args.set", process_set="global")
    with pytest.raises(ValueError, match="not registered"):
        ht.allreduce_async_(t, name="fp.args.unregistered", process_set=hvd.ProcessSet([0]))
    # None of the refused calls left its name claimed.
    for name in ("fp.args.typo", "fp.args.twice", "fp.args.bool", "fp.args.op"):
        ht.synchronize(ht.allreduce_async_(torch.ones(1), name=name))


def test_a_name_is_one_name_however_it_is_spelled(path):
    # A str name's key is kept from call to call (hvd/_fastpath.c): the same name as
    # bytes, or given again after completing, is the same key.
    name = f"fp.spelled.{path}"
    for _ in range(3):
        t = torch.ones(2)
        ht.synchronize(ht.allreduce_async_(t, name=name, op=ht.Sum))
        assert torch.equal(t, torch.full((2,), float(hvd.size())))
    h = ht.allreduce_async_(torch.ones(2), name=name)
    with pytest.raises(hvd.DuplicateNameError, match=name):
        ht.allreduce_async_(torch.ones(2), name=name.encode())
    with pytest.raises(hvd.DuplicateNameError, match=name):
        ht.allreduce_async_(torch.ones(2), name=name)
    ht.synchronize(h)


@pytest.mark.skipif(fast is None, reason="hvd._fastpath is not available")
def test_the_c_allreduce_takes_the_common_case_and_hands_over_the_rest():
    # Which calls hvd.torch.allreduce_async_ (C) hands to the Python function: a
    # recording stand-in is bound for the duration, then the real one again.
    from hvd.torch import async_ops
    handed = []

    def general(*args, **kwargs):
        handed.append(kwargs.get("name"))
        return async_ops._allreduce_async_(*args, **kwargs)

    fast.bind_torch(general, async_ops._DTYPES, _raw, hvd.ProcessSet)
    try:
        assert ht.allreduce_async_ is fast.allreduce_async_
        common = [torch.ones(4), torch.ones(2, 3, dtype=torch.float64),
                  torch.nn.Parameter(torch.ones(3), requires_grad=False)]
        for i, t in enumerate(common):
            ht.synchronize(ht.allreduce_async_(t, name=f"fp.taken.{i}", op=ht.Sum,
                                               prescale_factor=1, process_set=0))
        assert handed == []
        others = {"fp.handed.strided": dict(tensor=torch.ones(3, 2).t()),
                  "fp.handed.average": dict(tensor=torch.ones(2), average=True),
                  "fp.handed.scale": dict(tensor=torch.ones(2), postscale_factor=np.float32(1))}
        for name, kwargs in others.items():
            ht.synchronize(ht.allreduce_async_(name=name, **kwargs))
        assert handed == list(others)
    finally:
        fast.bind_torch(async_ops._allreduce_async_, async_ops._DTYPES, _raw, hvd.ProcessSet)
