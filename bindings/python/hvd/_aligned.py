"""Host arrays whose data start on a 64-byte boundary.

numpy aligns its allocations to 16 bytes only. Frameworks that adopt a numpy array's
memory without a copy need more: TensorFlow takes an array returned from
tf.numpy_function (or converted eagerly) in place only when it is 64-byte aligned and
copies it otherwise, and a dlpack tensor whose data are not aligned aborts the process.
Every output the collectives allocate comes from here, so that it can be handed on as is.
"""
import numpy as np

ALIGNMENT = 64


def aligned_bytes(nbytes):
    """A writeable uint8 array of `nbytes` (at least 1) whose data are 64-byte aligned;
    it keeps the larger allocation it is a slice of alive."""
    nbytes = max(int(nbytes), 1)
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    return raw[offset:offset + nbytes]


def aligned_empty(shape, dtype):
    """np.empty(shape, dtype), C-contiguous, with 64-byte aligned data."""
    dtype = np.dtype(dtype)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    count = int(np.prod(shape, dtype=np.int64))
    return aligned_bytes(count * dtype.itemsize)[:count * dtype.itemsize].view(dtype).reshape(shape)


def aligned_empty_like(array):
    return aligned_empty(array.shape, array.dtype)


def is_aligned(array):
    return array.ctypes.data % ALIGNMENT == 0
