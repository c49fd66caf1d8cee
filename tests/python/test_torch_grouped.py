"""hvd.torch grouped_allgather and grouped_reducescatter on CPU tensors (Horovod's
signatures): results against values computed for every rank, and against the
ungrouped calls; async forms, compression, groups of several dtypes (one libhvd
operation per dtype, as Horovod takes them), and group errors."""
import pytest

torch = pytest.importorskip("torch")
import hvd.torch as hvd  # noqa: E402
from hvd import reducescatter_rows  # noqa: E402
from conftest import unsupported_skips  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")

DTYPES = [torch.int32, torch.int64, torch.float32, torch.float64]


def name_of(dtype):
    return str(dtype).split(".")[-1]


def member(dtype, r, shape, salt=0):
    """Small values (exact in every dtype) that differ per rank and per member."""
    count = 1
    for d in shape:
        count *= d
    return ((torch.arange(count, dtype=torch.int64).reshape(shape) + salt) % 5 + 3 * r).to(dtype)


def gather_inputs(dtype, r):
    # Rows differ per rank and member; rank 0 sends no rows of member 1, nobody any
    # of member 3.
    shapes = [(r + 1, 3), (r, 2), (2 * r + 1,), (0, 4)]
    return [member(dtype, r, s, salt=i) for i, s in enumerate(shapes)]


@pytest.mark.parametrize("dtype", DTYPES, ids=name_of)
def test_grouped_allgather(dtype):
    mine = gather_inputs(dtype, hvd.rank())
    with unsupported_skips():
        outs = hvd.grouped_allgather(mine, name=f"t.ga.{name_of(dtype)}")
    every = [gather_inputs(dtype, r) for r in range(hvd.size())]
    assert isinstance(outs, list) and len(outs) == len(mine)
    for i, out in enumerate(outs):
        want = torch.cat([ins[i] for ins in every])
        assert out.dtype == dtype and out.shape == want.shape
        assert torch.equal(out, want)
    single = [hvd.allgather(t, name=f"t.ga.single.{name_of(dtype)}.{i}")
              for i, t in enumerate(mine)]
    for g, s in zip(outs, single):
        assert g.shape == s.shape and torch.equal(g, s)


def scatter_shapes():
    n = hvd.size()
    return [(2 * n + 1, 3), (n + 1,), (1, 2), (0, 4)]


def scatter_block(total, me, n):
    start = sum(reducescatter_rows(total.shape[0], r, n) for r in range(me))
    return total[start:start + reducescatter_rows(total.shape[0], me, n)]


@pytest.mark.parametrize("dtype", DTYPES, ids=name_of)
@pytest.mark.parametrize("op", ["sum", "average"])
def test_grouped_reducescatter(dtype, op):
    n, me = hvd.size(), hvd.rank()
    pre, post = 2.0, 3.0
    hvd_op = hvd.Sum if op == "sum" else hvd.Average
    shapes = scatter_shapes()
    mine = [member(dtype, me, s, salt=i) for i, s in enumerate(shapes)]
    with unsupported_skips():
        outs = hvd.grouped_reducescatter(mine, name=f"t.rs.{op}.{name_of(dtype)}", op=hvd_op,
                                         prescale_factor=pre, postscale_factor=post)
    assert isinstance(outs, list) and len(outs) == len(shapes)
    for i, (shape, out) in enumerate(zip(shapes, outs)):
        total = sum(member(dtype, r, shape, salt=i).double() * pre for r in range(n))
        if op == "average":
            total = torch.trunc(total / n) if not dtype.is_floating_point else total / n
        want = scatter_block(total * post, me, n)
        assert out.dtype == dtype and out.shape == want.shape
        assert torch.allclose(out.double(), want, rtol=1e-6)
    single = [hvd.reducescatter(t, name=f"t.rs.single.{op}.{name_of(dtype)}.{i}", op=hvd_op,
                                prescale_factor=pre, postscale_factor=post)
              for i, t in enumerate(mine)]
    for g, s in zip(outs, single):
        assert g.shape == s.shape and torch.allclose(g.double(), s.double(), rtol=1e-12)


def test_async_synchronize_returns_lists():
    me = hvd.rank()
    gathered = gather_inputs(torch.float32, me)
    scattered = [member(torch.int64, me, s, salt=i) for i, s in enumerate(scatter_shapes())]
    with unsupported_skips():
        h_gather = hvd.grouped_allgather_async(gathered, name="t.async.ga")
        h_scatter = hvd.grouped_reducescatter_async(scattered, name="t.async.rs", op=hvd.Sum)
    outs_scatter = hvd.synchronize(h_scatter)
    outs_gather = hvd.synchronize(h_gather)
    assert hvd.poll(h_scatter) and hvd.poll(h_gather)
    assert isinstance(outs_gather, list) and len(outs_gather) == len(gathered)
    assert isinstance(outs_scatter, list) and len(outs_scatter) == len(scattered)
    every = [gather_inputs(torch.float32, r) for r in range(hvd.size())]
    for i, out in enumerate(outs_gather):
        assert torch.equal(out, torch.cat([ins[i] for ins in every]))
    for i, (shape, out) in enumerate(zip(scatter_shapes(), outs_scatter)):
        total = sum(member(torch.int64, r, shape, salt=i) for r in range(hvd.size()))
        assert torch.equal(out, scatter_block(total, me, hvd.size()))


def test_compression_and_non_contiguous_members():
    n, me = hvd.size(), hvd.rank()
    base = torch.arange(4 * n * 4, dtype=torch.float32).reshape(4 * n, 4) + me
    members = [base[:, 1::2], base.t()]  # strided views
    outs = hvd.grouped_reducescatter(members, name="t.rs.fp16", op=hvd.Sum,
                                     compression=hvd.Compression.fp16)
    totals = [sum(torch.arange(4 * n * 4, dtype=torch.float32).reshape(4 * n, 4) + r
                  for r in range(n))]
    totals = [totals[0][:, 1::2], totals[0].t()]
    for out, total in zip(outs, totals):
        assert out.dtype == torch.float32
        assert torch.allclose(out, scatter_block(total, me, n), rtol=1e-3)


def mixed(r, factor=1):
    """A group of three dtypes, float32 twice (not adjacent), as Horovod takes it."""
    return [torch.full((2,), float(r + 1) * factor), torch.full((3,), r + 1.5,
                                                                  dtype=torch.float64),
            torch.full((1,), r + 1, dtype=torch.int32), torch.full((2, 2), float(r) * factor)]


@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_grouped_allreduce_of_several_dtypes(named):
    n, me = hvd.size(), hvd.rank()
    every = [mixed(r) for r in range(n)]
    sums = [sum(ins[i] for ins in every) for i in range(4)]
    name = (lambda s: f"t.mix.{s}") if named else (lambda s: None)
    outs = hvd.grouped_allreduce(mixed(me), op=hvd.Sum, name=name("ar"))
    for out, want in zip(outs, sums):
        assert out.dtype == want.dtype and torch.equal(out, want)
    ins = mixed(me)
    assert hvd.grouped_allreduce_(ins, op=hvd.Max, name=name("ari")) is not None
    for got, i in zip(ins, range(4)):
        assert torch.equal(got, every[-1][i])
    ins = mixed(me)
    h = hvd.grouped_allreduce_async_(ins, op=hvd.Sum, name=name("arai"))
    outs = hvd.synchronize(h)
    assert hvd.poll(h) and all(o is t for o, t in zip(outs, ins))
    assert all(torch.equal(o, w) for o, w in zip(outs, sums))
    outs = hvd.synchronize(hvd.grouped_allreduce_async(mixed(me), name=name("ara")))
    assert outs[0].tolist() == pytest.approx((sums[0] / n).tolist())
    assert outs[1].tolist() == pytest.approx((sums[1] / n).tolist())
    # Differentiable, member by member.
    xs = [t.requires_grad_() for t in mixed(me)[:2]]
    ys = hvd.grouped_allreduce(xs, op=hvd.Sum, name=name("ar.grad"))
    (ys[0].sum() + ys[1].sum()).backward()
    assert xs[0].grad.tolist() == [float(n)] * 2 and xs[1].grad.tolist() == [float(n)] * 3


def test_grouped_allgather_and_reducescatter_of_several_dtypes():
    n, me = hvd.size(), hvd.rank()
    every = [mixed(r) for r in range(n)]
    outs = hvd.grouped_allgather(mixed(me), name="t.mix.ag")
    for i, out in enumerate(outs):
        assert torch.equal(out, torch.cat([ins[i] for ins in every]))
    members = lambda r: [torch.full((n, 2), float(r)),  # noqa: E731
                         torch.full((2 * n,), r, dtype=torch.int64)]
    outs = hvd.synchronize(hvd.grouped_reducescatter_async(members(me), op=hvd.Sum,
                                                           name="t.mix.rs"))
    total = sum(range(n))
    assert outs[0].dtype == torch.float32 and outs[0].tolist() == [[float(total)] * 2]
    assert outs[1].dtype == torch.int64 and outs[1].tolist() == [total] * 2


def test_group_errors_are_clear():
    # A member of no libhvd type, or a scalar to scatter, is refused before anything
    # of the group is enqueued (the next call pairs up on every rank).
    with pytest.raises(ValueError, match="complex64"):
        hvd.grouped_allreduce([torch.ones(2), torch.ones(2, dtype=torch.complex64)],
                              name="t.e.complex")
    with pytest.raises(ValueError, match="at least one dimension"):
        hvd.grouped_reducescatter([torch.ones(2), torch.tensor(1, dtype=torch.int32)],
                                  name="t.e.mix.scalar")
    for call in (hvd.grouped_allgather, hvd.grouped_allgather_async,
                 hvd.grouped_reducescatter, hvd.grouped_reducescatter_async):
        with pytest.raises(ValueError, match="empty"):
            call([], name="t.e.empty")
        with pytest.raises(TypeError, match="list of tensors"):
            call(torch.ones(2, 2), name="t.e.lone")
    with pytest.raises(ValueError, match="at least one dimension"):
        hvd.grouped_reducescatter([torch.ones(2), torch.tensor(1.0)], name="t.e.scalar")
    out = hvd.grouped_allgather([torch.tensor([hvd.rank()])], name="t.e.after")
    assert out[0].tolist() == list(range(hvd.size()))


def test_horovod_names_are_exported():
    horovod_torch = pytest.importorskip("horovod.torch")
    if getattr(pytest.importorskip("horovod"), "backend", None) != "libhvd":
        pytest.skip("a real Horovod is installed")
    for name in ("grouped_allgather", "grouped_allgather_async", "grouped_reducescatter",
                 "grouped_reducescatter_async"):
        assert getattr(horovod_torch, name) is getattr(hvd, name)
