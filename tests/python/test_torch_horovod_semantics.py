"""Behaviour that code written for Horovod relies on, through hvd.torch: the exception
classes its handlers catch (also for dtypes libhvd lacks, handles that are not handles
and ProcessSet.rank() outside the set), nccl_built()'s version code, sparse allreduce, alltoall
argument checks, SyncBatchNorm over the global batch, process sets added twice."""
import pytest

torch = pytest.importorskip("torch")
import hvd  # noqa: E402
import hvd.torch as hvd_torch  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")


def go(tag):
    """Every rank meets here (rank 0 sends the go-ahead)."""
    hvd_torch.broadcast(torch.ones(1), 0, name=f"go.{tag}")


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "broadcast", "reducescatter"])
def test_duplicate_name_is_a_value_error(kind):
    """Horovod raises ValueError on the rank that enqueues a name already in flight."""
    def start(t):
        if kind == "broadcast":
            return hvd_torch.broadcast_async(t, root_rank=0, name=f"dup.{kind}")
        return getattr(hvd_torch, f"{kind}_async")(t, name=f"dup.{kind}")
    tensor = torch.ones(2 * hvd.size(), 3)
    if hvd.rank() == 0:
        first = start(tensor)
        with pytest.raises(ValueError) as info:
            start(tensor)
        assert isinstance(info.value, hvd.DuplicateNameError)
        assert isinstance(info.value, RuntimeError)  # still an HvdError
        go(f"dup.{kind}")
    else:
        go(f"dup.{kind}")
        first = start(tensor)
    hvd_torch.synchronize(first)


def test_mismatch_from_synchronize_is_a_runtime_error():
    h = hvd_torch.allreduce_async(torch.ones(hvd.rank() + 1), name="mismatch.count")
    with pytest.raises(RuntimeError) as info:
        hvd_torch.synchronize(h)
    assert isinstance(info.value, hvd_torch.HorovodInternalError)
    assert not isinstance(info.value, ValueError)


def test_allreduce_shapes_must_agree_not_only_counts():
    shape = (2, 3) if hvd.rank() == 0 else (3, 2)
    with pytest.raises(hvd.MismatchError) as info:
        hvd_torch.allreduce(torch.ones(shape), name="mismatch.shape")
    assert "shape" in str(info.value)


def test_nccl_built_is_the_version_code():
    built = hvd.nccl_built()
    assert isinstance(built, int)
    if hvd._capi.lib.hvd_nccl_built():
        assert built >= 2000  # NCCL 2.x: 2000 + ... (before 2.9) or 2MMPP after
    else:
        assert built == 0


def test_alltoall_splits_of_the_wrong_length():
    for splits in ([1] * (hvd.size() + 1), [hvd.size()] if hvd.size() > 1 else []):
        with pytest.raises(hvd.InvalidArgumentError) as info:
            hvd_torch.alltoall(torch.ones(hvd.size(), 2), torch.tensor(splits, dtype=torch.int32),
                               name="alltoall.bad.splits")
        text = str(info.value)
        assert f"{len(splits)} entries" in text and f"{hvd.size()} ranks" in text


def test_alltoall_splits_must_be_integers():
    with pytest.raises(ValueError, match="integers"):
        hvd_torch.alltoall(torch.ones(hvd.size()), torch.ones(hvd.size()),
                           name="alltoall.float.splits")


def test_alltoall_received_splits_come_back_where_splits_were():
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    n = hvd.size()
    for device in devices:
        place = f"cuda:{hvd.local_rank() % torch.cuda.device_count()}" if device == "cuda" \
            else "cpu"
        splits = torch.ones(n, dtype=torch.int32, device=place)
        out, received = hvd_torch.alltoall(torch.ones(n, device=place), splits,
                                           name=f"alltoall.splits.{device}")
        assert received.device.type == device and received.tolist() == [1] * n
        _, received = hvd_torch.alltoall(torch.ones(n, device=place), [1] * n,
                                         name=f"alltoall.list.{device}")
        assert received.device.type == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_group_on_two_devices_is_a_runtime_and_value_error():
    place = f"cuda:{hvd.local_rank() % torch.cuda.device_count()}"
    with pytest.raises(hvd.InvalidArgumentError, match="one device") as info:
        hvd_torch.grouped_allreduce([torch.ones(3), torch.ones(3, device=place)],
                                    name="group.two.devices")
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_sparse_allreduce_matches_the_dense_reduction(op):
    g = torch.Generator().manual_seed(hvd.rank())
    dense = torch.rand(12, 5, generator=g)
    dense[dense < 0.7] = 0
    sparse = dense.to_sparse()
    handle = hvd_torch.sparse_allreduce_async(sparse, name=f"sparse.{op}", op=op)
    expected = hvd_torch.allreduce(dense, op=op, name=f"sparse.dense.{op}")
    reduced = handle()  # Horovod's handle is a callable
    assert reduced.is_sparse
    assert torch.allclose(reduced.to_dense(), expected, atol=1e-6)
    assert hvd_torch.synchronize(handle) is reduced


def test_sparse_allreduce_rejects_dense_tensors():
    with pytest.raises(TypeError, match="sparse"):
        hvd_torch.sparse_allreduce_async(torch.ones(3), name="sparse.dense.input")


def test_sync_batch_norm_matches_batch_norm_on_the_global_batch():
    size, rank = hvd.size(), hvd.rank()
    g = torch.Generator().manual_seed(7)
    full = torch.randn(size * 3, 4, 5, generator=g).double()
    local = full[rank * 3:(rank + 1) * 3].clone().requires_grad_()
    reference_input = full.clone().requires_grad_()
    sync_bn = hvd_torch.SyncBatchNorm(4).double()
    bn = torch.nn.BatchNorm1d(4).double()
    out = sync_bn(local)
    ref = bn(reference_input)
    assert torch.allclose(out, ref[rank * 3:(rank + 1) * 3], atol=1e-10)
    assert torch.allclose(sync_bn.running_mean, bn.running_mean, atol=1e-10)
    assert torch.allclose(sync_bn.running_var, bn.running_var, atol=1e-10)
    weights = torch.arange(float(full.numel())).reshape(full.shape).double()
    (out * weights[rank * 3:(rank + 1) * 3]).sum().backward()
    (ref * weights).sum().backward()
    assert torch.allclose(local.grad, reference_input.grad[rank * 3:(rank + 1) * 3],
                          atol=1e-8)
    # Weight and bias gradients stay local; their sum over ranks is the reference's.
    w = hvd_torch.allreduce(sync_bn.weight.grad, op=hvd.Sum, name="sbn.w")
    b = hvd_torch.allreduce(sync_bn.bias.grad, op=hvd.Sum, name="sbn.b")
    assert torch.allclose(w, bn.weight.grad, atol=1e-8)
    assert torch.allclose(b, bn.bias.grad, atol=1e-8)
    sync_bn.eval()  # eval mode: the running statistics, no communication
    bn.eval()
    assert torch.allclose(sync_bn(local.detach()), bn(local.detach()), atol=1e-10)


def test_same_ranks_added_twice_is_a_value_error_on_every_rank():
    with pytest.raises(ValueError, match="already exists"):
        hvd.add_process_set(list(range(hvd.size())))  # the global set's ranks
    ranks = list(range(hvd.size() - 1))
    first = hvd.add_process_set(ranks)
    try:
        with pytest.raises(ValueError, match="already exists"):
            hvd.add_process_set(list(reversed(ranks)))
        assert hvd.process_set_ids().count(first.process_set_id) == 1
    finally:
        assert hvd.remove_process_set(first)
    again = hvd.add_process_set(ranks)  # once removed, the ranks can be added again
    assert hvd.remove_process_set(again)
    assert not hvd.remove_process_set(again)  # not registered any more: False, as Horovod
    assert not hvd.remove_process_set(hvd.global_process_set)


def test_unsupported_dtype_is_a_value_error():
    """Horovod raises ValueError for a complex tensor; libhvd's DtypeError is also the
    TypeError it raised before. Nothing is enqueued: the next call pairs up."""
    for call in (lambda t: hvd_torch.allreduce(t, name="complex.ar"),
                 lambda t: hvd_torch.allreduce_(t, name="complex.ari"),
                 lambda t: hvd_torch.allgather(t, name="complex.ag"),
                 lambda t: hvd_torch.broadcast(t, 0, name="complex.bc")):
        with pytest.raises(ValueError, match="complex64") as info:
            call(torch.ones(2, dtype=torch.complex64))
        assert isinstance(info.value, TypeError)
    go("complex")


@pytest.mark.parametrize("function", ["synchronize", "poll"])
def test_a_handle_that_is_not_one_is_named(function):
    """Horovod's handles are ints (poll() of an unknown one raises ValueError); libhvd's
    are objects: an int or anything else without wait()/poll() says what was passed."""
    call = getattr(hvd_torch, function)
    with pytest.raises(ValueError, match=r"expected the handle an \*_async call returned.*"
                                         r"got int 12345"):
        call(12345)
    with pytest.raises(TypeError, match="got str 'abc'"):
        call("abc")
    h = hvd_torch.allreduce_async(torch.ones(1), name=f"handle.after.{function}")
    assert hvd_torch.synchronize(h).tolist() == [1.0]
    assert hvd.synchronize(h).tolist() == [1.0]  # the numpy module's, the same check
    with pytest.raises(ValueError):
        getattr(hvd, function)(12345)


def test_process_set_rank_outside_the_set_is_a_value_error():
    """As Horovod's ProcessSet.rank(): ValueError on a rank outside the set, None for a
    set that is not registered."""
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks")
    ps = hvd.add_process_set([0])
    try:
        assert ps.size() == 1
        if hvd.rank() == 0:
            assert ps.rank() == 0
        else:
            with pytest.raises(ValueError, match="not part of process set"):
                ps.rank()
    finally:
        hvd.remove_process_set(ps)
    unregistered = hvd.ProcessSet([0])
    assert unregistered.rank() is None and unregistered.size() is None
    unknown = hvd.ProcessSet([0])
    unknown.process_set_id = 77  # an id libhvd never gave
    for query in (unknown.rank, unknown.size):
        with pytest.raises(ValueError, match="does not exist"):
            query()
