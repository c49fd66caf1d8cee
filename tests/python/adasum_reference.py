"""A straightforward Adasum for the tests to check libhvd against (Horovod's
definition, written from the formula, not from any implementation).

Two vectors a and b combine into (1 - a.b/(2|a|^2)) a + (1 - a.b/(2|b|^2)) b: their
sum when they are orthogonal, their average when they are parallel. A coefficient is
1 when its vector's norm squared is below sqrt(DBL_MIN) (a zero vector adds nothing).
The ranks' vectors combine over the binary tree of the ranks in order: (0,1), (2,3),
..., then (01, 23), ... All in float64.
"""
import contextlib
import math
import sys

import numpy as np
import pytest

TINY = math.sqrt(sys.float_info.min)


def combine(a, b):
    dot, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    ca = 1.0 - dot / (2.0 * aa) if aa >= TINY else 1.0
    cb = 1.0 - dot / (2.0 * bb) if bb >= TINY else 1.0
    return ca * a + cb * b


def adasum(tensors):
    """The Adasum of one tensor per rank (a power-of-two number of them), as float64
    of the first one's shape."""
    level = [np.asarray(t, np.float64).reshape(-1) for t in tensors]
    if len(level) & (len(level) - 1):
        raise ValueError(f"Adasum needs a power-of-two number of tensors, got {len(level)}")
    while len(level) > 1:
        level = [combine(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0].reshape(np.shape(tensors[0]))


def relative_error(got, expected, inputs):
    """|got - expected| relative to the largest of |expected| and the inputs' norms (a
    result may be much shorter than its inputs)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    scale = max([np.linalg.norm(expected)] + [np.linalg.norm(np.asarray(t, np.float64))
                                               for t in inputs])
    return np.linalg.norm(got - expected) / scale if scale > 0 else np.linalg.norm(got)


def is_power_of_two(n):
    return n > 0 and n & (n - 1) == 0


@contextlib.contextmanager
def power_of_two_set(hvd):
    """(members, process set): a power-of-two set registered in this job of 2 or more
    ranks (skips below 2), removed afterwards. Not every rank: the global set cannot be
    registered again. hvd: the package under test (hvd or hvd.torch)."""
    size = hvd.size()
    if size < 2:
        pytest.skip("needs 2 ranks")
    members = [1] if size == 2 else [0, 2] if size == 3 else [1, 3]
    ps = hvd.add_process_set(members)
    try:
        yield members, ps
    finally:
        hvd.remove_process_set(ps)
