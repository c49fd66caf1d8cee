"""A call that one rank refuses in Python (an argument that is no array or tensor)
while the others make it correctly: the refusing rank raises its TypeError/ValueError,
every other rank's call fails with MismatchError naming that rank and its reason (it
does not wait for ever), and the name, or the next automatic name, works again on
every rank at once. The last rank refuses."""
import numpy as np
import pytest
import torch

import hvd
import hvd.torch as ht

pytestmark = pytest.mark.usefixtures("world")


def refusing():
    return hvd.rank() == hvd.size() - 1


def assert_peer_refused(info, name, reason):
    text = str(info.value)
    assert name in text and f"rank {hvd.size() - 1} refused" in text and reason in text, text


def test_numpy_allreduce_of_none():
    if refusing():
        with pytest.raises(TypeError):
            hvd.allreduce(None, name="py.ref.none")
    else:
        with pytest.raises(hvd.MismatchError) as info:
            hvd.allreduce(np.ones(3), name="py.ref.none")
        assert_peer_refused(info, "py.ref.none", "got None")
    out = hvd.allreduce(np.ones(3), op=hvd.Sum, name="py.ref.none")
    np.testing.assert_array_equal(out, np.full(3, float(hvd.size())))


def test_numpy_in_place_on_a_list_unnamed():
    if refusing():
        with pytest.raises(TypeError):
            hvd.allreduce_([1.0, 2.0])
    else:
        with pytest.raises(hvd.MismatchError) as info:
            hvd.allreduce_(np.ones(2))
        assert_peer_refused(info, "noname", "numpy.ndarray")
    out = hvd.allreduce(np.ones(2), op=hvd.Sum)  # automatic names still match
    np.testing.assert_array_equal(out, np.full(2, float(hvd.size())))


def test_torch_allreduce_of_a_list():
    if refusing():
        with pytest.raises(TypeError):
            ht.allreduce([1.0, 2.0], name="py.ref.torch")
    else:
        with pytest.raises(hvd.MismatchError) as info:
            ht.allreduce(torch.ones(2), name="py.ref.torch")
        assert_peer_refused(info, "py.ref.torch", "torch.Tensor")
    out = ht.allreduce(torch.ones(2), op=hvd.Sum, name="py.ref.torch")
    assert torch.equal(out, torch.full((2,), float(hvd.size())))


def test_torch_group_that_is_no_list():
    group = [torch.ones(2), torch.ones(3)]
    if refusing():
        with pytest.raises(TypeError):
            ht.grouped_allreduce(torch.ones(2), name="py.ref.group")
    else:
        with pytest.raises(hvd.MismatchError) as info:
            ht.grouped_allreduce(group, name="py.ref.group")
        assert_peer_refused(info, "py.ref.group", "list of tensors")
    outs = ht.grouped_allreduce(group, op=hvd.Sum, name="py.ref.group")
    assert torch.equal(outs[1], torch.full((3,), float(hvd.size())))


def test_torch_broadcast_and_allgather():
    if refusing():
        with pytest.raises(TypeError):
            ht.broadcast("not a tensor", 0, name="py.ref.bcast")
        with pytest.raises(TypeError):
            ht.allgather(None, name="py.ref.gather")
    else:
        with pytest.raises(hvd.MismatchError) as info:
            ht.broadcast(torch.ones(2), 0, name="py.ref.bcast")
        assert_peer_refused(info, "py.ref.bcast", "torch.Tensor")
        with pytest.raises(hvd.MismatchError) as info:
            ht.allgather(torch.ones(2), name="py.ref.gather")
        assert_peer_refused(info, "py.ref.gather", "torch.Tensor")
    out = ht.allgather(torch.ones(2), name="py.ref.gather")
    assert out.shape[0] == 2 * hvd.size()



class Unpicklable:
    def __reduce__(self):
        raise TypeError("this object stays on its rank")


def test_object_collectives_with_an_object_that_cannot_be_pickled():
    # broadcast_object: the root (the refusing rank) cannot pickle; the others wait in
    # the size broadcast, which fails there.
    root = hvd.size() - 1
    if refusing():
        with pytest.raises(TypeError, match="stays on its rank"):
            hvd.broadcast_object(Unpicklable(), root_rank=root, name="py.ref.obj")
    else:
        with pytest.raises(hvd.MismatchError) as info:
            hvd.broadcast_object(None, root_rank=root, name="py.ref.obj")
        assert_peer_refused(info, "py.ref.obj.size", "cannot pickle Unpicklable")
    assert hvd.broadcast_object(hvd.rank(), root_rank=root, name="py.ref.obj") == root
    # allgather_object: one rank's object cannot be pickled.
    if refusing():
        with pytest.raises(TypeError, match="stays on its rank"):
            ht.allgather_object(Unpicklable(), name="py.ref.objs")
    else:
        with pytest.raises(hvd.MismatchError) as info:
            ht.allgather_object({"rank": hvd.rank()}, name="py.ref.objs")
        assert_peer_refused(info, "py.ref.objs.sizes", "cannot pickle Unpicklable")
    assert ht.allgather_object(hvd.rank(), name="py.ref.objs") == list(range(hvd.size()))


def test_torch_sparse_allreduce_of_a_dense_tensor():
    sparse = torch.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (4,))
    for name in ("py.ref.sparse", None):  # named, and automatic names (one per allgather)
        if refusing():
            with pytest.raises(TypeError, match="sparse COO"):
                ht.sparse_allreduce_async(torch.ones(4), name=name).wait()
        else:
            with pytest.raises(hvd.MismatchError) as info:
                ht.sparse_allreduce_async(sparse, name=name).wait()
            assert_peer_refused(info, "py.ref.sparse.indices" if name else "allgather",
                                "sparse COO")
        out = ht.sparse_allreduce_async(sparse, name=name, op=hvd.Sum).wait()
        assert torch.equal(out.to_dense(), sparse.to_dense() * hvd.size())


def test_a_framework_error_before_the_call_is_announced_too(monkeypatch):
    # Not one of the entry point's own checks: whatever torch raises while the call is
    # prepared (here a RuntimeError) leaves the peers waiting just the same.
    from hvd.torch import async_ops

    def broken(tensor, function):
        raise RuntimeError("the framework could not prepare this tensor")
    if refusing():
        monkeypatch.setattr(async_ops, "_check_tensor", broken)
        with pytest.raises(RuntimeError, match="could not prepare"):
            ht.allreduce(torch.ones(2), name="py.ref.runtime")
        monkeypatch.undo()
    else:
        with pytest.raises(hvd.MismatchError) as info:
            ht.allreduce(torch.ones(2), name="py.ref.runtime")
        assert_peer_refused(info, "py.ref.runtime", "could not prepare")
    out = ht.allreduce(torch.ones(2), op=hvd.Sum, name="py.ref.runtime")
    assert torch.equal(out, torch.full((2,), float(hvd.size())))


def test_torch_group_that_writes_one_tensor_twice():
    # The last rank gives one tensor twice (its memory would be reduced twice): it gets
    # the library's InvalidArgumentError naming the two members, the others a
    # MismatchError naming it, and the group works again once each tensor is given once.
    big = torch.ones(1 << 17)  # 512 KB: reduced where it lies
    other = torch.ones(1 << 17)
    group = [big, big] if refusing() else [big, other]
    if refusing():
        with pytest.raises(hvd.InvalidArgumentError) as info:
            ht.grouped_allreduce_(group, op=hvd.Sum, name="py.ref.twice")
        assert "tensors 0 and 1 of the group write overlapping memory" in str(info.value)
    else:
        with pytest.raises(hvd.MismatchError) as info:
            ht.grouped_allreduce_(group, op=hvd.Sum, name="py.ref.twice")
        assert_peer_refused(info, "py.ref.twice", "overlapping memory")
    assert torch.equal(big, torch.ones(1 << 17))  # nothing was reduced
    ht.grouped_allreduce_([big, other], op=hvd.Sum, name="py.ref.twice")
    assert torch.equal(big, torch.full((1 << 17,), float(hvd.size())))


def test_torch_group_of_overlapping_views_on_every_rank():
    base = torch.arange(16.0)
    with pytest.raises(hvd.InvalidArgumentError) as info:
        ht.grouped_allreduce_([base[:8], base[10:], base[4:12]], op=hvd.Sum, name="py.ref.views")
    assert "tensors 0 and 2 of the group" in str(info.value)
    assert torch.equal(base, torch.arange(16.0))
    # Views side by side do not overlap: reduced, each once.
    ht.grouped_allreduce_([base[:8], base[8:]], op=hvd.Sum, name="py.ref.views")
    assert torch.equal(base, torch.arange(16.0) * hvd.size())
