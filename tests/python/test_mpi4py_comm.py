"""libhvd on a communicator made by mpi4py."""
import numpy as np
import pytest

MPI = pytest.importorskip("mpi4py.MPI")
import hvd  # noqa: E402


def test_init_on_a_split_communicator():
    world = MPI.COMM_WORLD
    color = world.Get_rank() % 2
    sub = world.Split(color, world.Get_rank())
    try:
        hvd.init(comm=sub)
        assert hvd.size() == sub.Get_size() and hvd.rank() == sub.Get_rank()
        out = hvd.allreduce(np.array([world.Get_rank()], np.int64), op=hvd.Sum, name="sub")
        members = [r for r in range(world.Get_size()) if r % 2 == color]
        assert out[0] == sum(members)
        hvd.shutdown()
    finally:
        sub.Free()
    # MPI stays usable by mpi4py after libhvd shut down.
    assert world.allreduce(1) == world.Get_size()


def test_init_on_a_list_of_world_ranks():
    world = MPI.COMM_WORLD
    hvd.init(comm=list(range(world.Get_size())))
    assert hvd.size() == world.Get_size()
    out = hvd.allreduce(np.ones(3), op=hvd.Sum, name="listed")
    np.testing.assert_array_equal(out, np.full(3, float(world.Get_size())))
    hvd.shutdown()


def test_bad_comm_argument():
    with pytest.raises(TypeError):
        hvd.init(comm="world")
