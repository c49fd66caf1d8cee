"""Failures become the right HvdError subclass, with the library's detail, on every
rank; the runtime keeps working afterwards."""
import numpy as np
import pytest

import hvd

pytestmark = pytest.mark.usefixtures("world")


def assert_still_works(name):
    out = hvd.allreduce(np.ones(3), op=hvd.Sum, name=name)
    np.testing.assert_array_equal(out, np.full(3, float(hvd.size())))


def test_count_mismatch_on_every_rank():
    with pytest.raises(hvd.MismatchError) as info:
        hvd.allreduce(np.ones(hvd.rank() + 1, np.float32), name="mismatch.count")
    err = info.value
    assert err.status == 3 and "mismatch.count" in str(err) and err.detail
    assert isinstance(err, hvd.HvdError)
    assert_still_works("after.count")


def test_dtype_mismatch_on_every_rank():
    dtype = np.float32 if hvd.rank() == 0 else np.float64
    with pytest.raises(hvd.MismatchError):
        hvd.allreduce(np.ones(4, dtype), name="mismatch.dtype")
    assert_still_works("after.dtype")


def test_op_mismatch_on_every_rank():
    op = hvd.Sum if hvd.rank() == 0 else hvd.Max
    with pytest.raises(hvd.MismatchError):
        hvd.allreduce(np.ones(4), op=op, name="mismatch.op")
    assert_still_works("after.op")


def test_broadcast_root_mismatch_on_every_rank():
    with pytest.raises(hvd.MismatchError):
        hvd.broadcast(np.ones(2), root_rank=hvd.rank(), name="mismatch.root")
    assert_still_works("after.root")


def test_bad_arguments_fail_at_once():
    with pytest.raises(hvd.InvalidArgumentError) as info:
        hvd.broadcast(np.ones(2), root_rank=hvd.size(), name="bad.root")
    assert "root_rank" in str(info.value) and isinstance(info.value, ValueError)
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.allreduce(np.ones(2), op=99, name="bad.op")
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.allreduce(np.ones(2, bool), op=hvd.Average, name="bad.bool.average")
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.allreduce(np.ones(2), name="bad.scale", prescale_factor=float("nan"))
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.allreduce(np.ones(2), name="x" * 100000)
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.allreduce(np.ones(2), name="bad.set", process_set=12345)
    with pytest.raises(hvd.UnsupportedError) as info:
        hvd.reducescatter(np.ones(2 * hvd.size()), op=hvd.Adasum, name="bad.adasum")
    assert isinstance(info.value, NotImplementedError)
    assert_still_works("after.bad")


def test_python_side_type_errors():
    with pytest.raises(TypeError):
        hvd.allreduce(np.ones(2, np.complex64), name="complex")
    with pytest.raises(TypeError):
        hvd.allreduce(np.ones(2, np.uint64), name="uint64")
    with pytest.raises(TypeError):
        hvd.allreduce(np.ones(2, np.float32), name="bf16.size", dtype=hvd.bfloat16)
    with pytest.raises(TypeError):
        hvd.allreduce_([1.0, 2.0], name="list.inplace")
    with pytest.raises(ValueError):
        hvd.allreduce_(np.ones(4)[::2], name="strided.inplace")
    assert_still_works("after.types")


def test_scale_factors_must_be_numbers():
    # float() would read "2"; a factor is a number (as Horovod's), and the message names
    # the parameter. numpy scalars are numbers.
    with pytest.raises(TypeError, match="prescale_factor must be a number, got str '2'"):
        hvd.allreduce(np.ones(2), name="scale.str", prescale_factor="2")
    with pytest.raises(TypeError, match="postscale_factor must be a number, got NoneType"):
        hvd.allreduce(np.ones(2), name="scale.none", postscale_factor=None)
    out = hvd.allreduce(np.ones(2), name="scale.numpy", op=hvd.Sum,
                        prescale_factor=np.float32(2.0))
    np.testing.assert_array_equal(out, np.full(2, 2.0 * hvd.size()))
    assert_still_works("after.scales")


def test_duplicate_name_in_flight():
    # Rank 0 holds "dup" in flight until the others get the "go" broadcast, which it
    # sends only after the duplicate was rejected: no race.
    if hvd.rank() == 0:
        first = hvd.allreduce_async(np.ones(2), op=hvd.Sum, name="dup")
        with pytest.raises(hvd.DuplicateNameError) as info:
            hvd.allreduce_async(np.ones(2), op=hvd.Sum, name="dup")
        assert info.value.status == 4 and "dup" in str(info.value)
        assert isinstance(info.value, ValueError)  # what Horovod raises
        hvd.broadcast(np.ones(1), 0, name="dup.go")
    else:
        hvd.broadcast(np.ones(1), 0, name="dup.go")
        first = hvd.allreduce_async(np.ones(2), op=hvd.Sum, name="dup")
    np.testing.assert_array_equal(hvd.synchronize(first), np.full(2, float(hvd.size())))


def test_unknown_handle():
    handle = hvd.allreduce_async(np.ones(1), name="handle.once")
    handle.wait()
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.errors.check(hvd._capi.lib.hvd_wait(handle.raw), "hvd_wait")
    assert handle.poll()  # a completed Handle answers without asking libhvd again


def test_alltoall_splits_of_the_wrong_length_name_both_lengths():
    for splits in ([1] * (hvd.size() + 1), [2 * hvd.size()]):
        with pytest.raises(hvd.InvalidArgumentError) as info:
            hvd.alltoall(np.ones((2 * hvd.size(), 3)), splits=splits, name="a2a.bad.splits")
        assert f"{len(splits)} entries" in str(info.value)
        assert f"{hvd.size()} ranks" in str(info.value)
    assert_still_works("after.splits")


def test_messages_use_python_names():
    with pytest.raises(ValueError) as info:
        hvd.allreduce(np.ones(2), op="sum", name="op.text")
    text = str(info.value)
    assert "op='sum'" in text and "hvd.Average" in text and "hvd.Sum" in text
    with pytest.raises(TypeError, match="None"):
        hvd.allreduce(None, name="none.input")
    with pytest.raises(TypeError, match="numpy array"):
        hvd.allreduce([object()], name="object.input")
    with pytest.raises(hvd.UnsupportedError) as info:
        hvd.reducescatter(np.ones(2 * hvd.size()), op=hvd.Adasum, name="adasum.words")
    assert "hvd.Adasum" in str(info.value) and "hvd.Average" in str(info.value)
    assert "HVD_" not in str(info.value)
    assert_still_works("after.words")


def test_init_on_a_list_of_ranks_without_mpi4py(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "mpi4py", None)
    with pytest.raises(ImportError) as info:
        hvd.init(comm=[0, 1])
    assert "mpi4py" in str(info.value) and "add_process_set" in str(info.value)
    # What to install, where /usr/bin/python3 has no mpi4py.
    assert "--system-site-packages" in str(info.value) and "pip install mpi4py" in str(info.value)


def test_shape_mismatch_with_equal_counts_on_every_rank():
    shape = (2, 3) if hvd.rank() % 2 == 0 else (3, 2)
    with pytest.raises(hvd.MismatchError) as info:
        hvd.allreduce(np.ones(shape), name="shape.mismatch")
    assert "shape" in str(info.value)
