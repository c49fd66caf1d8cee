"""fork() after hvd.init(): a forked child (os.fork, multiprocessing's 'fork' start
method) must not touch the parent's runtime. In the child hvd reads as not
initialized, every call raises at once with a message that says why, and the child's
exit leaves the parent's runtime running."""
import ctypes
import multiprocessing
import os
import time

import numpy as np
import pytest

import hvd
from timeouts import scaled

CHILD_SECONDS = scaled(30)


def _child_checks():
    """Runs in the child; returns a list of problems (empty: all is well)."""
    problems = []
    if hvd.is_initialized():
        problems.append("hvd.is_initialized() is True in the forked child")
    try:
        hvd.allreduce(np.ones(3, dtype=np.float32), name="in.child")
        problems.append("allreduce in the child did not raise")
    except hvd.NotInitializedError as e:
        if "fork()" not in str(e) or "spawn" not in str(e):
            problems.append(f"the error does not say why: {e}")
    try:
        hvd.init()
        problems.append("hvd.init() in the child did not raise")
    except hvd.UnsupportedError as e:
        if "fork()" not in str(e):
            problems.append(f"hvd.init's error does not say why: {e}")
    return problems


def _wait_child(pid):
    deadline = time.monotonic() + CHILD_SECONDS
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return status
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child did not exit within {CHILD_SECONDS} s (blocked in libhvd?)")


def _check_parent(name):
    out = hvd.allreduce(np.full(4, hvd.rank() + 1.0, dtype=np.float32), op=hvd.Sum, name=name)
    size = hvd.size()
    assert np.all(out == size * (size + 1) / 2)


def test_os_fork_child_exits_normally(world):
    _check_parent("fork.before")
    pending = hvd.allreduce_async(np.ones(1 << 16, dtype=np.float32), op=hvd.Sum, name="fork.inflight")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        problems = _child_checks()
        os.write(write_end, "\n".join(problems).encode())
        os.close(write_end)
        # A normal C exit: the atexit handlers run (libhvd's among them), as when a
        # script that forked returns; pytest's own teardown is not for the child.
        ctypes.CDLL(None).exit(1 if problems else 0)
    os.close(write_end)
    status = _wait_child(pid)
    with os.fdopen(read_end) as r:
        report = r.read()
    assert report == "", report
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert np.all(pending.wait() == hvd.size())
    _check_parent("fork.after")


def _pool_task(i):
    return i, _child_checks()


def test_multiprocessing_fork_pool(world):
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        results = pool.map_async(_pool_task, range(4)).get(timeout=CHILD_SECONDS)
    assert sorted(i for i, _ in results) == [0, 1, 2, 3]
    for _, problems in results:
        assert problems == []
    _check_parent("fork.after.pool")
