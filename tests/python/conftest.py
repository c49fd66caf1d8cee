"""Shared fixtures: every rank runs the same tests in the same order, so collective
calls inside tests pair up across ranks by their names."""
import contextlib

import pytest

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
