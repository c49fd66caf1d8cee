"""Shared fixtures: every rank runs the same tests in the same order, so collective
calls inside tests pair up across ranks by their names."""
import contextlib
import os
import signal
import sys

import pytest

if os.environ.get("KERAS_BACKEND") == "torch":
    # torch's wheels bring their own NCCL, newer than the system's that libhvd links:
    # torch loads first, as in a Keras script, so that its libraries bind to theirs.
    import torch  # noqa: F401

import hvd


@pytest.fixture(scope="session")
def world():
    """libhvd initialized on MPI_COMM_WORLD for the whole session."""
    hvd.init()
    yield hvd
    hvd.shutdown()


@contextlib.contextmanager
def unsupported_skips():
    """Skips the test when the operation is not implemented by this libhvd build.
    Every rank gets the same answer, so every rank skips together."""
    try:
        yield
    except hvd.UnsupportedError:
        pytest.skip("unsupported on this build")


def _world_size():
    """The job's size from the launcher's environment (MPICH's Hydra or Open MPI)."""
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        if name in os.environ:
            return int(os.environ[name])
    return 1


def pytest_sessionfinish(session, exitstatus):
    session.config.hvd_failed = exitstatus not in (0, pytest.ExitCode.NO_TESTS_COLLECTED)


def pytest_unconfigure(config):
    """A rank whose tests failed would leave the other ranks waiting in a collective
    it never joins: once its report is printed, it ends the job. A process killed by
    a signal makes the launcher stop every rank, so the run fails now, not at the
    test's timeout."""
    if getattr(config, "hvd_failed", False) and _world_size() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
