"""Grouped allgather and reducescatter over numpy arrays: every member checked against
values each rank computes for all ranks itself, and against the ungrouped calls."""
import numpy as np
import pytest

import hvd
from conftest import unsupported_skips

pytestmark = pytest.mark.usefixtures("world")

DTYPES = [np.int32, np.int64, np.float32, np.float64]


def dtype_id(dtype):
    return np.dtype(dtype).name


def member(dtype, r, shape, salt=0):
    """Small values (exact in every dtype, no overflow in sums) that differ per rank."""
    count = int(np.prod(shape, dtype=np.int64))
    return ((np.arange(count).reshape(shape) + salt) % 5 + 3 * r).astype(dtype)


def gather_shapes(r):
    """Per-rank shapes of the allgather members: rows differ per rank and per member,
    rank 0 sends no rows of the second member, every rank sends none of the last."""
    return [(r + 1, 3), (r, 2, 2), (2 * r + 1,), (), (0, 4)]


def gather_inputs(dtype, r):
    return [member(dtype, r, shape, salt=i) for i, shape in enumerate(gather_shapes(r))]


def gather_expected(dtype):
    per_rank = [gather_inputs(dtype, r) for r in range(hvd.size())]
    return [np.concatenate([np.reshape(ins[i], (-1,) + ins[i].shape[1:]) for ins in per_rank])
            for i in range(len(per_rank[0]))]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_grouped_allgather_varied_shapes(dtype):
    mine = gather_inputs(dtype, hvd.rank())
    with unsupported_skips():
        outs = hvd.grouped_allgather(mine, name=f"ga.{dtype_id(dtype)}")
    expected = gather_expected(dtype)
    assert isinstance(outs, list) and len(outs) == len(expected)
    for out, want in zip(outs, expected):
        assert out.dtype == np.dtype(dtype) and out.shape == want.shape
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=dtype_id)
def test_grouped_allgather_equals_ungrouped(dtype):
    mine = gather_inputs(dtype, hvd.rank())
    with unsupported_skips():
        grouped = hvd.grouped_allgather(mine, name=f"ga.eq.{dtype_id(dtype)}")
    single = [hvd.allgather(a, name=f"ga.eq.single.{dtype_id(dtype)}.{i}")
              for i, a in enumerate(mine)]
    for g, s in zip(grouped, single):
        assert g.shape == s.shape and g.dtype == s.dtype
        np.testing.assert_array_equal(g, s)


def test_grouped_allgather_of_one_and_unnamed():
    with unsupported_skips():
        (out,) = hvd.grouped_allgather([np.array([hvd.rank()], np.int64)])
    np.testing.assert_array_equal(out, np.arange(hvd.size()))
    outs = hvd.grouped_allgather([np.full((1, 2), hvd.rank(), np.float64),
                                  np.zeros((0, 2), np.float64)])
    np.testing.assert_array_equal(outs[0][:, 0], np.arange(hvd.size()))
    assert outs[1].shape == (0, 2)


def scatter_shapes():
    """Shapes of the reducescatter members (the same on every rank): uneven rows, fewer
    rows than ranks (some ranks get none) and an empty tensor."""
    n = hvd.size()
    return [(2 * n + 1, 3), (n + 1,), (1, 2), (0, 4)]


def scatter_block(total, me, n):
    start = sum(hvd.reducescatter_rows(total.shape[0], r, n) for r in range(me))
    return total[start:start + hvd.reducescatter_rows(total.shape[0], me, n)]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", ["sum", "average"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (2.0, 3.0)], ids=["plain", "scaled"])
def test_grouped_reducescatter(dtype, op, scales):
    n, me = hvd.size(), hvd.rank()
    pre, post = scales
    hvd_op = hvd.Sum if op == "sum" else hvd.Average
    shapes = scatter_shapes()
    mine = [member(dtype, me, s, salt=i) for i, s in enumerate(shapes)]
    name = f"rs.{op}.{dtype_id(dtype)}.{pre:g}"
    with unsupported_skips():
        outs = hvd.grouped_reducescatter(mine, op=hvd_op, name=name, prescale_factor=pre,
                                         postscale_factor=post)
    assert isinstance(outs, list) and len(outs) == len(shapes)
    for i, (shape, out) in enumerate(zip(shapes, outs)):
        stack = np.stack([member(dtype, r, shape, salt=i) for r in range(n)])
        total = np.sum(stack.astype(np.float64) * pre, axis=0)
        if op == "average":
            # integers: a truncating division, so an average of integers stays exact
            total = np.trunc(total / n) if np.issubdtype(dtype, np.integer) else total / n
        want = scatter_block(total * post, me, n)
        assert out.dtype == np.dtype(dtype) and out.shape == want.shape
        np.testing.assert_allclose(out.astype(np.float64), want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.float64], ids=dtype_id)
def test_grouped_reducescatter_equals_ungrouped(dtype):
    shapes = scatter_shapes()
    mine = [member(dtype, hvd.rank(), s, salt=i) for i, s in enumerate(shapes)]
    with unsupported_skips():
        grouped = hvd.grouped_reducescatter(mine, op=hvd.Average, name=f"rs.eq.{dtype_id(dtype)}",
                                            postscale_factor=2.0)
    single = [hvd.reducescatter(a, op=hvd.Average, name=f"rs.eq.single.{dtype_id(dtype)}.{i}",
                                postscale_factor=2.0) for i, a in enumerate(mine)]
    for g, s in zip(grouped, single):
        assert g.shape == s.shape and g.dtype == s.dtype
        np.testing.assert_allclose(g, s, rtol=1e-12)


def test_async_and_synchronize_out_of_order():
    me = hvd.rank()
    gathered = gather_inputs(np.float32, me)
    scattered = [member(np.int64, me, s, salt=i) for i, s in enumerate(scatter_shapes())]
    with unsupported_skips():
        h_gather = hvd.grouped_allgather_async(gathered, name="async.ga")
        h_scatter = hvd.grouped_reducescatter_async(scattered, op=hvd.Sum, name="async.rs")
    assert isinstance(h_gather, hvd.Handle) and isinstance(h_scatter, hvd.Handle)
    outs_scatter = hvd.synchronize(h_scatter)
    outs_gather = hvd.synchronize(h_gather)
    assert hvd.poll(h_gather) and hvd.synchronize(h_gather) is outs_gather
    for out, want in zip(outs_gather, gather_expected(np.float32)):
        np.testing.assert_array_equal(out, want)
    single = [hvd.reducescatter(a, op=hvd.Sum, name=f"async.rs.single.{i}")
              for i, a in enumerate(scattered)]
    for g, s in zip(outs_scatter, single):
        np.testing.assert_array_equal(g, s)


def test_non_contiguous_members():
    """Strided views are copied once; the handle keeps the copies alive, so dropping
    the caller's array right after the call is safe."""
    base = np.arange(24, dtype=np.float64).reshape(6, 4) + 100 * hvd.rank()
    handle = hvd.grouped_allgather_async([base[:, ::2], base[::2]], name="views.ga")
    del base
    outs = handle.wait()
    full = [np.arange(24, dtype=np.float64).reshape(6, 4) + 100 * r for r in range(hvd.size())]
    np.testing.assert_array_equal(outs[0], np.concatenate([f[:, ::2] for f in full]))
    np.testing.assert_array_equal(outs[1], np.concatenate([f[::2] for f in full]))


def test_group_errors_are_clear():
    with pytest.raises(TypeError, match="one dtype"):
        hvd.grouped_allgather([np.ones(2, np.float32), np.ones(2, np.int32)], name="e.mixed.ga")
    with pytest.raises(TypeError, match="one dtype"):
        hvd.grouped_reducescatter([np.ones(2, np.float32), np.ones(2, np.float64)],
                                  name="e.mixed.rs")
    for call in (hvd.grouped_allgather, hvd.grouped_allgather_async,
                 hvd.grouped_reducescatter, hvd.grouped_reducescatter_async):
        with pytest.raises(ValueError, match="empty"):
            call([], name="e.empty")
        with pytest.raises(TypeError, match="list of arrays"):
            call(np.ones((2, 2), np.float32), name="e.lone")
    with pytest.raises(ValueError, match="at least one dimension"):
        hvd.grouped_reducescatter([np.ones(2, np.float32), np.float32(1.0)], name="e.scalar")
    # The failed calls enqueued nothing: the job is still in step.
    out = hvd.grouped_allgather([np.array([hvd.rank()], np.int32)], name="e.after")
    np.testing.assert_array_equal(out[0], np.arange(hvd.size()))


def test_group_shape_mismatch_fails_on_every_rank():
    if hvd.size() < 2:
        pytest.skip("a mismatch needs two ranks")
    # Trailing dimensions must agree across ranks; rank 0 disagrees for member 1.
    width = 3 if hvd.rank() == 0 else 2
    with unsupported_skips(), pytest.raises(hvd.MismatchError):
        hvd.grouped_allgather([np.ones((1, 2), np.float32), np.ones((1, width), np.float32)],
                              name="e.mismatch.ga")
    with pytest.raises(hvd.MismatchError):
        hvd.grouped_reducescatter([np.ones((4, 2), np.float32),
                                   np.ones((4, width), np.float32)], name="e.mismatch.rs")
    out = hvd.grouped_reducescatter([np.ones((hvd.size(), 2), np.float32)], op=hvd.Sum,
                                    name="e.mismatch.after")
    np.testing.assert_array_equal(out[0], np.full((1, 2), hvd.size(), np.float32))


def test_grouped_ops_on_a_process_set():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks")
    # A set equal to an existing one (the global set) is refused, so 2 ranks use one.
    members = [0, hvd.size() - 1] if hvd.size() > 2 else [1]
    with unsupported_skips():
        ps = hvd.add_process_set(members)
    try:
        if hvd.rank() not in members:
            return
        me, n = members.index(hvd.rank()), len(members)
        outs = hvd.grouped_allgather([np.full((me + 1, 2), me, np.int32),
                                      np.arange(me, dtype=np.int32)],
                                     name="ps.ga", process_set=ps)
        np.testing.assert_array_equal(outs[0][:, 0], [r for r in range(n) for _ in range(r + 1)])
        np.testing.assert_array_equal(outs[1], [k for r in range(n) for k in range(r)])
        shape = (2 * n + 1, 2)
        outs = hvd.grouped_reducescatter([member(np.float64, hvd.rank(), shape),
                                          np.ones((n,), np.float64)],
                                         op=hvd.Sum, name="ps.rs", process_set=ps)
        total = np.sum([member(np.float64, r, shape) for r in members], axis=0)
        np.testing.assert_array_equal(outs[0], scatter_block(total, me, n))
        np.testing.assert_array_equal(outs[1], np.full((1,), n, np.float64))
    finally:
        hvd.remove_process_set(ps)
