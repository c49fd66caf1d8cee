"""Which libhvd a process loads from a checkout that holds builds for both MPIs: the
one linked against the MPI whose launcher started the process, then build/. (Loading
the other made every rank of `hvdrun -np 2` a one-rank job of its own.)"""
import os

import pytest

from hvd import _library

ROOT = os.path.abspath(os.path.join(os.path.dirname(_library.__file__), "..", "..", ".."))
MPICH_BUILD = os.path.join(ROOT, "build", "lib", _library._SONAME)
OPENMPI_BUILD = os.path.join(ROOT, "build-openmpi", "lib", _library._SONAME)
OTHER_BUILD = os.path.join(ROOT, "build-asan", "lib", _library._SONAME)
LINKED = {MPICH_BUILD: "mpich", OPENMPI_BUILD: "openmpi", OTHER_BUILD: "mpich"}
LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "HYDRA_CONTROL_FD")


@pytest.fixture
def checkout(monkeypatch):
    monkeypatch.setattr(_library.glob, "glob",
                        lambda pattern: [OPENMPI_BUILD, OTHER_BUILD, MPICH_BUILD])
    monkeypatch.setattr(_library, "_linked_mpi", LINKED.get)
    for name in LAUNCHER_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_open_mpi_launcher_takes_the_open_mpi_build(checkout):
    checkout.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert _library._build_tree_candidates()[0] == OPENMPI_BUILD


def test_hydra_launcher_takes_build_first(checkout):
    checkout.setenv("PMI_SIZE", "2")
    assert _library._build_tree_candidates() == [MPICH_BUILD, OTHER_BUILD, OPENMPI_BUILD]


def test_no_launcher_takes_build_first(checkout):
    assert _library._build_tree_candidates()[0] == MPICH_BUILD


def test_linked_mpi_reads_the_library_file(tmp_path):
    fake = tmp_path / "libhvd.so.0"
    fake.write_bytes(b"\x7fELF....libmpi.so.40\x00....")
    assert _library._linked_mpi(str(fake)) == "openmpi"
    fake.write_bytes(b"\x7fELF....libmpich.so.12\x00....")
    assert _library._linked_mpi(str(fake)) == "mpich"
    assert _library._linked_mpi(str(tmp_path / "missing")) is None
