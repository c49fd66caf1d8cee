"""Every numpy collective for every dtype, checked against values each rank computes
for all ranks itself."""
import os
import tempfile

import numpy as np
import pytest

import hvd
from conftest import unsupported_skips

pytestmark = pytest.mark.usefixtures("world")

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.float16,
          np.float32, np.float64, np.bool_]


def rank_input(dtype, r, shape=(4, 5)):
    """Small values (no overflow in sums over 3 ranks) that differ per rank."""
    base = (np.arange(np.prod(shape)).reshape(shape) % 4) + r
    if dtype == np.bool_:
        return (base % 2).astype(bool)
    return base.astype(dtype)


def all_inputs(dtype, shape=(4, 5)):
    return [rank_input(dtype, r, shape) for r in range(hvd.size())]


def to_bf16_bits(values):
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def test_queries_match_the_launcher():
    assert 0 <= hvd.rank() < hvd.size()
    if "PMI_SIZE" in os.environ:
        assert hvd.size() == int(os.environ["PMI_SIZE"])
        assert hvd.rank() == int(os.environ["PMI_RANK"])
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.is_initialized()
    assert hvd.mpi_built() and hvd.version_number() >= 100
    assert hvd.version() == hvd.version_string() == hvd.__version__
    major, minor, patch = (int(part) for part in hvd.version().split("."))
    assert hvd.version_number() == major * 10000 + minor * 100 + patch
    assert hvd.param("HOROVOD_CYCLE_TIME")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_allreduce_sum(dtype):
    inputs = all_inputs(dtype)
    if dtype == np.bool_:
        expected = np.logical_or.reduce(inputs)
    else:
        expected = np.sum(np.stack(inputs), axis=0).astype(dtype)
    out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, name=f"sum.{np.dtype(dtype).name}")
    assert out.dtype == np.dtype(dtype) and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != np.bool_],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["min", "max", "product", "average"])
def test_allreduce_ops(dtype, op):
    stack = np.stack(all_inputs(dtype)).astype(np.float64)
    hvd_op = {"min": hvd.Min, "max": hvd.Max, "product": hvd.Product,
              "average": hvd.Average}[op]
    expected = {"min": stack.min(0), "max": stack.max(0), "product": stack.prod(0),
                "average": stack.sum(0) / hvd.size()}[op]
    if op == "average" and np.issubdtype(dtype, np.integer):
        expected = np.trunc(expected)
    out = hvd.allreduce(rank_input(dtype, hvd.rank()), op=hvd_op,
                        name=f"{op}.{np.dtype(dtype).name}")
    tol = 1e-3 if dtype == np.float16 else 1e-12
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tol)


def test_allreduce_bool_min_is_logical_and():
    inputs = all_inputs(np.bool_)
    out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Min, name="bool.and")
    np.testing.assert_array_equal(out, np.logical_and.reduce(inputs))


def test_allreduce_bfloat16_as_raw_16_bit():
    inputs = [np.arange(12, dtype=np.float32) * (r + 1) for r in range(hvd.size())]
    bits = to_bf16_bits(inputs[hvd.rank()])
    out = hvd.allreduce(bits, op=hvd.Sum, name="bf16.sum", dtype=hvd.bfloat16)
    assert out.dtype == np.uint16
    np.testing.assert_array_equal(from_bf16_bits(out), np.sum(inputs, axis=0))
    avg = hvd.allreduce(bits, op=hvd.Average, name="bf16.avg", dtype="bfloat16")
    np.testing.assert_allclose(from_bf16_bits(avg), np.mean(inputs, axis=0), rtol=1e-2)


def test_prescale_and_postscale():
    x = np.full(7, hvd.rank() + 1.0, dtype=np.float64)
    out = hvd.allreduce(x, op=hvd.Sum, name="scaled", prescale_factor=2.0, postscale_factor=0.25)
    total = sum(r + 1.0 for r in range(hvd.size()))
    np.testing.assert_allclose(out, np.full(7, total * 0.5))


def test_in_place_out_and_non_contiguous_inputs():
    x = np.full((3, 4), float(hvd.rank()), dtype=np.float32)
    same = hvd.allreduce_(x, op=hvd.Sum, name="inplace")
    assert same is x
    total = sum(range(hvd.size()))
    np.testing.assert_array_equal(x, np.full((3, 4), total, np.float32))

    out = np.empty(4, dtype=np.float32)
    result = hvd.allreduce(np.ones(4, np.float32), op=hvd.Sum, name="out", out=out)
    assert result is out
    np.testing.assert_array_equal(out, np.full(4, hvd.size(), np.float32))

    strided = np.arange(20, dtype=np.int32)[::2]
    reduced = hvd.allreduce(strided, op=hvd.Sum, name="strided")
    np.testing.assert_array_equal(reduced, strided * hvd.size())

    with pytest.raises(ValueError):
        hvd.allreduce_(np.arange(20, dtype=np.int32)[::2], name="strided.inplace")


def test_empty_and_scalar():
    empty = hvd.allreduce(np.zeros((0, 3), np.float32), name="empty")
    assert empty.shape == (0, 3)
    scalar = hvd.allreduce(np.float64(2.0), op=hvd.Sum, name="scalar")
    assert scalar.shape == () and scalar == 2.0 * hvd.size()


def test_grouped_allreduce():
    arrays = [np.full(n, hvd.rank() + 1.0, np.float32) for n in (1, 10, 1000)]
    outs = hvd.grouped_allreduce(arrays, op=hvd.Sum, name="group")
    total = sum(r + 1.0 for r in range(hvd.size()))
    for a, o in zip(arrays, outs):
        assert o.shape == a.shape
        np.testing.assert_array_equal(o, np.full(a.shape, total, np.float32))
    same = hvd.grouped_allreduce_(arrays, op=hvd.Average, name="group.inplace")
    assert all(s is a for s, a in zip(same, arrays))
    np.testing.assert_allclose(arrays[2], np.full(1000, total / hvd.size()))
    with pytest.raises(TypeError):
        hvd.grouped_allreduce([np.ones(2, np.float32), np.ones(2, np.float64)], name="mixed")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_broadcast_from_every_root(dtype):
    for root in range(hvd.size()):
        mine = rank_input(dtype, hvd.rank())
        out = hvd.broadcast(mine, root, name=f"bcast.{np.dtype(dtype).name}.{root}")
        np.testing.assert_array_equal(out, rank_input(dtype, root))
        np.testing.assert_array_equal(mine, rank_input(dtype, hvd.rank()))  # input untouched
        buf = rank_input(dtype, hvd.rank())
        assert hvd.broadcast_(buf, root, name=f"bcast_.{np.dtype(dtype).name}.{root}") is buf
        np.testing.assert_array_equal(buf, rank_input(dtype, root))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_allgather_uneven_rows(dtype):
    rows = [r + 1 for r in range(hvd.size())]
    inputs = [rank_input(dtype, r, (rows[r], 3)) for r in range(hvd.size())]
    with unsupported_skips():
        out = hvd.allgather(inputs[hvd.rank()], name=f"gather.{np.dtype(dtype).name}")
    assert out.dtype == np.dtype(dtype) and out.shape == (sum(rows), 3)
    np.testing.assert_array_equal(out, np.concatenate(inputs))


def test_allgather_bfloat16_and_scalar():
    with unsupported_skips():
        bits = hvd.allgather(to_bf16_bits([hvd.rank() + 0.5]), name="gather.bf16",
                             dtype=hvd.bfloat16)
    np.testing.assert_array_equal(from_bf16_bits(bits), [r + 0.5 for r in range(hvd.size())])
    out = hvd.allgather(np.int64(hvd.rank()), name="gather.scalar")
    np.testing.assert_array_equal(out, np.arange(hvd.size()))


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float16, np.float64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_alltoall_with_splits(dtype):
    n, me = hvd.size(), hvd.rank()

    def block(src, dst):
        rows = (src + dst) % 3 + 1
        value = (src * 7 + dst) % 5 if dtype != np.bool_ else (src + dst) % 2
        return np.full((rows, 2), value, dtype=dtype)

    send = np.concatenate([block(me, d) for d in range(n)])
    splits = [block(me, d).shape[0] for d in range(n)]
    with unsupported_skips():
        out, received = hvd.alltoall(send, splits=splits, name=f"a2a.{np.dtype(dtype).name}")
    np.testing.assert_array_equal(out, np.concatenate([block(s, me) for s in range(n)]))
    np.testing.assert_array_equal(received, [block(s, me).shape[0] for s in range(n)])


def test_alltoall_even_split():
    n, me = hvd.size(), hvd.rank()
    send = np.array([me * 100 + d for d in range(n) for _ in range(2)], dtype=np.int64)
    with unsupported_skips():
        out, received = hvd.alltoall(send, name="a2a.even")
    np.testing.assert_array_equal(out, [s * 100 + me for s in range(n) for _ in range(2)])
    np.testing.assert_array_equal(received, [2] * n)


@pytest.mark.parametrize("dtype", [np.int32, np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["sum", "average"])
def test_reducescatter(dtype, op):
    n, me = hvd.size(), hvd.rank()
    dim0 = 2 * n + 1
    inputs = all_inputs(dtype, (dim0, 3))
    total = np.sum(np.stack(inputs).astype(np.float64), axis=0)
    if op == "average":
        total = total / n
        if np.issubdtype(dtype, np.integer):
            total = np.trunc(total)
    start = sum(hvd.reducescatter_rows(dim0, r, n) for r in range(me))
    rows = hvd.reducescatter_rows(dim0, me, n)
    with unsupported_skips():
        out = hvd.reducescatter(inputs[me], op=hvd.Sum if op == "sum" else hvd.Average,
                                name=f"rs.{op}.{np.dtype(dtype).name}")
    assert out.shape == (rows, 3) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.astype(np.float64), total[start:start + rows], rtol=1e-3)


def test_barrier_and_join():
    with unsupported_skips():
        hvd.barrier()
    with unsupported_skips():
        last = hvd.join()
    assert 0 <= last < hvd.size()
    everyone = hvd.allreduce(np.array([last, -last], np.int64), op=hvd.Max, name="join.last")
    assert everyone[0] == last and everyone[1] == -last


def test_dynamic_process_set():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks")
    # A set equal to an existing one (the global set) is refused, so 2 ranks use one.
    members = [0, hvd.size() - 1] if hvd.size() > 2 else [1]
    with unsupported_skips():
        ps = hvd.add_process_set(members)
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.add_process_set(list(range(hvd.size())))
    assert ps.process_set_id > 0 and ps.process_set_id in hvd.process_set_ids()
    assert hvd.process_set_ranks(ps) == members and ps.size() == len(members)
    if hvd.rank() in members:
        assert ps.included() and ps.rank() == members.index(hvd.rank())
        out = hvd.allreduce(np.array([hvd.rank()], np.int32), op=hvd.Sum, name="ps.sum",
                            process_set=ps)
        assert out[0] == sum(members)
    else:
        assert not ps.included()
        with pytest.raises(ValueError):  # as Horovod's ProcessSet.rank()
            ps.rank()
        with pytest.raises(hvd.InvalidArgumentError):
            hvd.allreduce(np.ones(1), name="ps.outsider", process_set=ps)
    hvd.remove_process_set(ps)
    assert ps.process_set_id is None


def test_objects():
    got = hvd.broadcast_object({"from": hvd.rank(), "list": [1, 2]}, root_rank=0, name="obj")
    assert got == {"from": 0, "list": [1, 2]}
    with unsupported_skips():
        every = hvd.allgather_object(("rank", hvd.rank()), name="objs")
    assert every == [("rank", r) for r in range(hvd.size())]


def test_timeline_writes_a_file():
    name = hvd.broadcast_object(os.path.join(tempfile.gettempdir(),
                                             f"hvd-timeline-{os.getpid()}.json"), 0,
                                name="timeline.path")
    with unsupported_skips():
        hvd.start_timeline(name)
    hvd.allreduce(np.ones(3), name="timeline.op")
    hvd.stop_timeline()
    if hvd.rank() == 0:
        assert os.path.getsize(name) > 0
        os.unlink(name)


def test_counters_count_collectives():
    before = hvd.counters()["collectives"]
    hvd.allreduce(np.ones(100), name="counted")
    after = hvd.counters()
    assert after["collectives"] > before
    # Within one node fused batches never take libhvd's ring (HVD_FUSED_RING=auto).
    assert after["ring_allreduces"] == 0


def test_repeated_lone_allreduce_travels_with_its_negotiation():
    # From the second call on, a lone small allreduce rides with its negotiation round
    # (HVD_SPECULATIVE_BYTES): counted in "speculative", results unchanged.
    before = hvd.counters()["speculative"]
    for step in range(5):
        out = hvd.allreduce(np.full(10, float(hvd.rank() + step)), op=hvd.Sum, name="lone.metric")
        expected = sum(range(hvd.size())) + step * hvd.size()
        np.testing.assert_array_equal(out, np.full(10, float(expected)))
    assert hvd.counters()["speculative"] - before >= 3
