"""hvd.torch collectives on CPU tensors: every op, in-place forms, async, autograd."""
import pytest

torch = pytest.importorskip("torch")
import hvd.torch as hvd  # noqa: E402
from conftest import unsupported_skips  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]


def rank_tensor(dtype, r, shape=(3, 4)):
    base = (torch.arange(12).reshape(3, 4) % 4 + r)[: shape[0]]
    if dtype == torch.bool:
        return (base % 2).bool()
    return base.to(dtype)


def name_of(dtype):
    return str(dtype).split(".")[-1]


@pytest.mark.parametrize("dtype", DTYPES, ids=name_of)
def test_allreduce_every_dtype(dtype):
    inputs = [rank_tensor(dtype, r) for r in range(hvd.size())]
    if dtype == torch.bool:
        expected = torch.stack(inputs).any(0)
    else:
        expected = torch.stack([t.double() for t in inputs]).sum(0).to(dtype)
    out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, name=f"t.sum.{name_of(dtype)}")
    assert out.dtype == dtype and torch.equal(out, expected)
    inplace = rank_tensor(dtype, hvd.rank())
    assert hvd.allreduce_(inplace, op=hvd.Sum, name=f"t.sum_.{name_of(dtype)}") is inplace
    assert torch.equal(inplace, expected)


def test_average_default_and_deprecated_flag():
    x = torch.full((5,), float(hvd.rank()))
    mean = sum(range(hvd.size())) / hvd.size()
    assert torch.allclose(hvd.allreduce(x, name="t.avg"), torch.full((5,), mean))
    assert torch.allclose(hvd.allreduce(x, average=False, name="t.avg.false"),
                          torch.full((5,), mean * hvd.size()))
    with pytest.raises(ValueError):
        hvd.allreduce(x, average=True, op=hvd.Sum, name="t.avg.both")


def test_scaling_and_fp16_compression():
    x = torch.full((6,), hvd.rank() + 1.0, dtype=torch.float32)
    total = sum(r + 1.0 for r in range(hvd.size()))
    out = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5,
                        name="t.scaled")
    assert torch.allclose(out, torch.full((6,), total))
    comp = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16, name="t.fp16")
    assert comp.dtype == torch.float32 and torch.allclose(comp, torch.full((6,), total))


def test_non_contiguous_in_place():
    base = torch.full((4, 6), float(hvd.rank()))
    view = base.t()  # not contiguous
    assert not view.is_contiguous()
    out = hvd.allreduce_(view, op=hvd.Sum, name="t.transposed")
    assert out is view
    assert torch.equal(base, torch.full((4, 6), float(sum(range(hvd.size())))))


def test_async_forms_and_poll():
    h1 = hvd.allreduce_async(torch.ones(10), op=hvd.Sum, name="t.async")
    buf = torch.ones(10)
    h2 = hvd.allreduce_async_(buf, op=hvd.Sum, name="t.async_")
    assert hvd.synchronize(h2) is buf
    out = hvd.synchronize(h1)
    assert hvd.poll(h1) and torch.equal(out, torch.full((10,), float(hvd.size())))


def test_views_of_one_flat_buffer_are_fused_where_they_lie():
    # Gradients kept as views into one flat buffer and reduced one by one in place (a
    # contiguous-gradient framework's hooks): from the round after every rank saw them
    # back to back, libhvd fuses them and reduces them where they lie (HVD_FUSE_LARGE).
    sizes = [70000, 300, 90000, 65537]  # three above HVD_INPLACE_MIN_BYTES' 256 KiB
    flat = torch.empty(sum(sizes))
    views = list(torch.split(flat, sizes))
    n = hvd.size()
    for step in range(4):
        for i, v in enumerate(views):
            v.copy_(torch.arange(v.numel(), dtype=torch.float32) % 7 + hvd.rank() + i + step)
        handles = [hvd.allreduce_async_(v, op=hvd.Average, name=f"t.flat.{i}")
                   for i, v in enumerate(views)]
        for h in handles:
            hvd.synchronize(h)
        for i, v in enumerate(views):
            base = torch.arange(v.numel(), dtype=torch.float32) % 7 + i + step
            assert torch.allclose(v, base + (n - 1) / 2), f"step {step} view {i}"
    if n > 1:
        from hvd.basics import counters
        assert counters()["back_to_back"] == 1


def test_autograd_through_allreduce():
    x = torch.ones(3, requires_grad=True)
    y = hvd.allreduce(x * (hvd.rank() + 1), op=hvd.Sum, name="t.grad")
    y.sum().backward()
    # d(sum over ranks of y)/dx on this rank = size * (rank + 1).
    assert torch.allclose(x.grad, torch.full((3,), float(hvd.size() * (hvd.rank() + 1))))


def test_grouped_allreduce():
    tensors = [torch.full((n,), hvd.rank() + 1.0) for n in (1, 7, 300)]
    total = sum(r + 1.0 for r in range(hvd.size()))
    outs = hvd.grouped_allreduce(tensors, op=hvd.Sum, name="t.group")
    assert all(torch.allclose(o, torch.full_like(o, total)) for o in outs)
    same = hvd.grouped_allreduce_(tensors, op=hvd.Sum, name="t.group_")
    assert all(s is t for s, t in zip(same, tensors))
    assert torch.allclose(tensors[1], torch.full((7,), total))


@pytest.mark.parametrize("dtype", DTYPES, ids=name_of)
def test_broadcast_every_dtype(dtype):
    root = hvd.size() - 1
    mine = rank_tensor(dtype, hvd.rank())
    out = hvd.broadcast(mine, root, name=f"t.bcast.{name_of(dtype)}")
    assert torch.equal(out, rank_tensor(dtype, root))
    assert torch.equal(mine, rank_tensor(dtype, hvd.rank()))
    assert hvd.broadcast_(mine, root, name=f"t.bcast_.{name_of(dtype)}") is mine
    assert torch.equal(mine, rank_tensor(dtype, root))


@pytest.mark.parametrize("dtype", DTYPES, ids=name_of)
def test_allgather_every_dtype(dtype):
    inputs = [rank_tensor(dtype, r, (1 + r % 3, 4)) for r in range(hvd.size())]
    with unsupported_skips():
        out = hvd.allgather(inputs[hvd.rank()], name=f"t.gather.{name_of(dtype)}")
    assert out.dtype == dtype and torch.equal(out, torch.cat(inputs))


def test_alltoall_with_and_without_splits():
    n, me = hvd.size(), hvd.rank()
    send = torch.tensor([me * 10 + d for d in range(n) for _ in range(d + 1)],
                        dtype=torch.float32)
    splits = torch.tensor([d + 1 for d in range(n)], dtype=torch.int32)
    with unsupported_skips():
        out, received = hvd.alltoall(send, splits=splits, name="t.a2a")
    expected = torch.tensor([s * 10 + me for s in range(n) for _ in range(me + 1)],
                            dtype=torch.float32)
    assert torch.equal(out, expected)
    assert received.tolist() == [me + 1] * n
    even = hvd.alltoall(torch.arange(2 * n, dtype=torch.int64) + 100 * me, name="t.a2a.even")
    assert even.tolist() == [100 * s + 2 * me + k for s in range(n) for k in range(2)]


def test_reducescatter():
    n, me = hvd.size(), hvd.rank()
    dim0 = 2 * n
    x = torch.arange(dim0 * 3, dtype=torch.float32).reshape(dim0, 3) + me
    total = sum(torch.arange(dim0 * 3, dtype=torch.float32).reshape(dim0, 3) + r
                for r in range(n))
    with unsupported_skips():
        out = hvd.reducescatter(x, op=hvd.Sum, name="t.rs")
    assert torch.allclose(out, total[2 * me:2 * me + 2])
    avg = hvd.reducescatter(x, name="t.rs.avg")
    assert torch.allclose(avg, total[2 * me:2 * me + 2] / n)


def test_join_and_barrier():
    with unsupported_skips():
        hvd.barrier()
    with unsupported_skips():
        last = hvd.join()
    assert isinstance(last, int) and 0 <= last < hvd.size()


def test_objects():
    state = hvd.broadcast_object({"epoch": 3 + hvd.rank()}, root_rank=0)
    assert state == {"epoch": 3}
    with unsupported_skips():
        every = hvd.allgather_object(hvd.rank() * 2)
    assert every == [2 * r for r in range(hvd.size())]


def test_basics_and_flags():
    assert hvd.is_initialized() and hvd.mpi_enabled() and hvd.mpi_built()
    assert hvd.mpi_threads_supported() and not hvd.gloo_enabled()
    assert hvd.global_process_set.process_set_id == 0
    assert hvd.global_process_set.size() == hvd.size()


def test_bad_tensors():
    with pytest.raises(TypeError):
        hvd.allreduce(torch.ones(2, dtype=torch.complex64), name="t.complex")
    with pytest.raises(TypeError):
        hvd.allreduce([1.0, 2.0], name="t.list")
    with pytest.raises(hvd.HorovodInternalError):
        hvd.allreduce(torch.ones(hvd.rank() + 1), name="t.mismatch")
