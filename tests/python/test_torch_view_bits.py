"""Tensors whose memory is not their value: torch's negative bit (the imaginary part of
a conjugate view, `x._neg_view()`) keeps the values negated in memory. Every
collective, blocking, async, in place and grouped, must reduce and send the logical
values, through the C per-call path (hvd._fastpath) and through ctypes alike (the
suite runs once with HVD_FASTPATH=0). Each rank's input is -(r + 1) (times a member
factor), so a lost sign shows in Sum, Max, Min, Product and in the gathered rows."""
import pytest

torch = pytest.importorskip("torch")
import hvd.torch as hvd  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")


def neg_bit(values):
    """A float32 tensor holding `values` whose memory holds their negation."""
    t = torch.tensor(values, dtype=torch.float32).neg()._neg_view()
    assert t.is_neg() and t.is_contiguous() and t.tolist() == [float(v) for v in values]
    return t


def conj_imag(values):
    """The same through the conjugate: (1 - v i).conj().imag holds -v in memory."""
    t = torch.tensor([complex(1, -v) for v in values], dtype=torch.complex64).conj().imag
    assert t.is_neg() and t.tolist() == [float(v) for v in values]
    return t


MAKERS = [neg_bit, conj_imag]


def mine(make, count=3, factor=1):
    return make([-(hvd.rank() + 1) * factor] * count)


def every_rank():
    return [-(r + 1) for r in range(hvd.size())]


def reduced(op, values):
    if op == hvd.Sum:
        return sum(values)
    if op == hvd.Average:
        return sum(values) / len(values)
    if op == hvd.Max:
        return max(values)
    if op == hvd.Min:
        return min(values)
    out = 1
    for v in values:
        out *= v
    return out


OPS = [hvd.Sum, hvd.Average, hvd.Max, hvd.Min, hvd.Product]
OP_IDS = ["sum", "average", "max", "min", "product"]


@pytest.mark.parametrize("make", MAKERS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_allreduce_out_of_place(make, op):
    want = reduced(op, every_rank())
    out = hvd.allreduce(mine(make), op=op, name=f"vb.ar.{make.__name__}.{op}")
    assert out.tolist() == pytest.approx([want] * 3)
    h = hvd.allreduce_async(mine(make), op=op, name=f"vb.ara.{make.__name__}.{op}")
    assert hvd.synchronize(h).tolist() == pytest.approx([want] * 3)


@pytest.mark.parametrize("make", MAKERS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_allreduce_in_place(make, op):
    """In place (the fast path's call): the tensor keeps its negative bit and reads
    as the result."""
    want = reduced(op, every_rank())
    t = mine(make)
    assert hvd.allreduce_(t, op=op, name=f"vb.ari.{make.__name__}.{op}") is t
    assert t.is_neg() and t.tolist() == pytest.approx([want] * 3)
    t = mine(make)
    out = hvd.synchronize(hvd.allreduce_async_(t, op=op, name=f"vb.arai.{make.__name__}.{op}"))
    assert out is t and t.tolist() == pytest.approx([want] * 3)
    # Positional arguments, as an optimizer's hook passes them, and a scale.
    t = mine(make)
    hvd.synchronize(hvd.allreduce_async_(t, None, f"vb.arap.{make.__name__}.{op}", op, 2.0))
    if op in (hvd.Sum, hvd.Average, hvd.Max, hvd.Min):
        assert t.tolist() == pytest.approx([2 * want] * 3)


def test_scalar_and_negated_view_of_ones():
    # The trial's cases: a 0-dim conj().imag and torch.ones(3)._neg_view().
    im = torch.tensor(1 + 2j, dtype=torch.complex64).conj().imag
    n = hvd.size()
    assert hvd.allreduce(im, op=hvd.Sum, name="vb.im").item() == -2 * n
    assert hvd.allgather(im, name="vb.im.ag").tolist() == [-2.0] * n
    assert hvd.allreduce(torch.ones(3)._neg_view(), op=hvd.Sum, name="vb.ones").tolist() == \
        [-float(n)] * 3


@pytest.mark.parametrize("make", MAKERS, ids=lambda m: m.__name__)
def test_allgather_broadcast_alltoall_reducescatter(make):
    n, r = hvd.size(), hvd.rank()
    gathered = hvd.allgather(mine(make, count=2), name=f"vb.ag.{make.__name__}")
    assert gathered.tolist() == [float(v) for v in every_rank() for _ in range(2)]

    root = n - 1
    out = hvd.broadcast(mine(make), root_rank=root, name=f"vb.bc.{make.__name__}")
    assert out.tolist() == [-float(n)] * 3
    # In place, into a tensor with the bit, from a root with or without it.
    t = mine(make)
    hvd.broadcast_(t, root_rank=root, name=f"vb.bci.{make.__name__}")
    assert t.is_neg() and t.tolist() == [-float(n)] * 3
    src = mine(make) if r == 0 else torch.zeros(3)._neg_view()
    hvd.broadcast_(src, root_rank=0, name=f"vb.bci0.{make.__name__}")
    assert src.tolist() == [-1.0] * 3

    sent = make([-(r + 1) * 10 - d for d in range(n)])  # row d goes to rank d
    received = hvd.alltoall(sent, name=f"vb.a2a.{make.__name__}")
    assert received.tolist() == [float(-(s + 1) * 10 - r) for s in range(n)]

    block = hvd.reducescatter(mine(make, count=2 * n), op=hvd.Sum,
                              name=f"vb.rs.{make.__name__}")
    assert block.tolist() == [float(sum(every_rank()))] * 2


@pytest.mark.parametrize("make", MAKERS, ids=lambda m: m.__name__)
def test_grouped(make):
    n = hvd.size()
    members = lambda: [mine(make), torch.full((2,), float(hvd.rank())), mine(make, 1, 3)]  # noqa: E731
    wants = [[float(max(every_rank()))] * 3, [float(n - 1)] * 2,
             [float(max(3 * v for v in every_rank()))]]
    outs = hvd.grouped_allreduce(members(), op=hvd.Max, name=f"vb.gar.{make.__name__}")
    assert [o.tolist() for o in outs] == wants
    ts = members()
    hvd.grouped_allreduce_(ts, op=hvd.Max, name=f"vb.gari.{make.__name__}")
    assert [t.tolist() for t in ts] == wants and ts[0].is_neg()
    ts = members()
    hvd.synchronize(hvd.grouped_allreduce_async_(ts, op=hvd.Max,
                                                 name=f"vb.garai.{make.__name__}"))
    assert [t.tolist() for t in ts] == wants

    outs = hvd.grouped_allgather([mine(make), mine(make, 1)], name=f"vb.gag.{make.__name__}")
    assert outs[0].tolist() == [float(v) for v in every_rank() for _ in range(3)]
    assert outs[1].tolist() == [float(v) for v in every_rank()]

    outs = hvd.grouped_reducescatter([mine(make, count=n), mine(make, count=2 * n)],
                                     op=hvd.Sum, name=f"vb.grs.{make.__name__}")
    total = float(sum(every_rank()))
    assert outs[0].tolist() == [total] and outs[1].tolist() == [total] * 2

