"""Gradients through the torch collectives, as Horovod defines them: allgather gives
this rank's rows of the averaged gradient, broadcast the averaged gradient on the
root and zero elsewhere, reducescatter the allgathered gradient (times the set size
for Sum), alltoall the reverse alltoall; grouped forms member by member."""
import pytest

torch = pytest.importorskip("torch")
import hvd.torch as hvd  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")


def leaf(*shape, value=None):
    t = torch.arange(float(torch.Size(shape).numel())).reshape(shape) + 10 * hvd.rank()
    if value is not None:
        t = torch.full(shape, float(value))
    return t.double().requires_grad_()


def weights(n_rows, cols):
    """The same per-row weights on every rank: the loss's gradient is known."""
    return torch.arange(1.0, n_rows + 1).double().reshape(-1, 1).expand(n_rows, cols)


def test_allgather_gradient_is_own_rows_of_the_average():
    rows = hvd.rank() + 1  # different first dimensions per rank
    x = leaf(rows, 2)
    out = hvd.allgather(x, name="grad.allgather")
    total = sum(r + 1 for r in range(hvd.size()))
    assert out.shape == (total, 2)
    (out * weights(total, 2)).sum().backward()
    start = sum(r + 1 for r in range(hvd.rank()))
    # Every rank's incoming gradient is the same, so the average is that gradient.
    assert torch.equal(x.grad, weights(total, 2)[start:start + rows])


def test_allgather_gradient_of_a_scalar_has_its_shape():
    x = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    hvd.allgather(x, name="grad.allgather.scalar").sum().backward()
    assert x.grad.shape == () and x.grad.item() == 1.0


def test_grouped_allgather_gradients():
    xs = [leaf(hvd.rank() + 1, 3), leaf(2, 1)]
    outs = hvd.grouped_allgather(xs, name="grad.grouped_allgather")
    sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
    assert torch.equal(xs[0].grad, torch.ones_like(xs[0]))
    assert torch.equal(xs[1].grad, torch.full_like(xs[1], 2.0))


def test_broadcast_gradient_goes_to_the_root_only():
    root = hvd.size() - 1
    x = leaf(4)
    out = hvd.broadcast(x, root_rank=root, name="grad.broadcast")
    assert torch.equal(out.detach(), torch.arange(4.0).double() + 10 * root)
    (out * (hvd.rank() + 1)).sum().backward()
    average = sum(r + 1 for r in range(hvd.size())) / hvd.size()
    expected = torch.full((4,), average if hvd.rank() == root else 0.0).double()
    assert torch.allclose(x.grad, expected)


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_reducescatter_gradient_is_the_allgather(op):
    n = hvd.size() * 2
    x = leaf(n, 3)
    out = hvd.reducescatter(x, op=op, name=f"grad.reducescatter.{op}")
    assert out.shape == (2, 3)
    (out * (hvd.rank() + 1)).sum().backward()
    gathered = torch.cat([torch.full((2, 3), float(r + 1)) for r in range(hvd.size())]).double()
    factor = hvd.size() if op == hvd.Sum else 1.0
    assert torch.allclose(x.grad, gathered * factor)


def test_reducescatter_gradient_scaled_like_the_forward():
    x = leaf(hvd.size(), 2)
    out = hvd.reducescatter(x, op=hvd.Average, prescale_factor=2.0, postscale_factor=3.0,
                            name="grad.reducescatter.scaled")
    out.sum().backward()
    assert torch.allclose(x.grad, torch.full_like(x, 6.0))


def test_grouped_reducescatter_gradients():
    xs = [leaf(hvd.size(), 2), leaf(2 * hvd.size())]
    outs = hvd.grouped_reducescatter(xs, op=hvd.Sum, name="grad.grouped_reducescatter")
    sum(o.sum() for o in outs).backward()
    for x in xs:
        assert torch.allclose(x.grad, torch.full_like(x, float(hvd.size())))


def test_alltoall_gradient_is_the_reverse_alltoall():
    # Rank r sends r + 1 rows to every rank; the gradient of each sent row comes back
    # from the rank that received it.
    size, rank = hvd.size(), hvd.rank()
    x = leaf(size * (rank + 1), 2)
    splits = torch.full((size,), rank + 1, dtype=torch.int32)
    out, received = hvd.alltoall(x, splits, name="grad.alltoall")
    assert received.tolist() == [r + 1 for r in range(size)]
    (out * (rank + 1)).sum().backward()
    expected = torch.cat([torch.full((rank + 1, 2), float(dest + 1)) for dest in range(size)])
    assert torch.equal(x.grad, expected.double())


def test_alltoall_even_split_gradient():
    x = leaf(hvd.size(), 4)
    out = hvd.alltoall(x, name="grad.alltoall.even")
    out.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_grouped_allreduce_gradients(op):
    xs = [leaf(3), leaf(2, 2)]
    outs = hvd.grouped_allreduce(xs, op=op, name=f"grad.grouped_allreduce.{op}")
    sum(o.sum() for o in outs).backward()
    expected = float(hvd.size()) if op == hvd.Sum else 1.0
    for x in xs:
        assert torch.allclose(x.grad, torch.full_like(x, expected))


def test_gradients_inside_a_process_set():
    members = list(range(0, hvd.size(), 2)) or [0]
    ps = hvd.add_process_set(members)
    try:
        if hvd.rank() in members:
            x = leaf(hvd.rank() + 1, 2)
            out = hvd.allgather(x, name="grad.set.allgather", process_set=ps)
            out.sum().backward()
            assert torch.equal(x.grad, torch.ones_like(x))
            y = leaf(2 * len(members))
            scattered = hvd.reducescatter(y, op=hvd.Sum, name="grad.set.reducescatter",
                                          process_set=ps)
            scattered.sum().backward()
            assert torch.allclose(y.grad, torch.full_like(y, float(len(members))))
        hvd.barrier()
    finally:
        hvd.remove_process_set(ps)
