"""Broadcast and allgather of picklable Python objects, as uint8 arrays."""
import pickle

import numpy as np

from . import collectives
from ._refusal import refuse


def _pickled(obj, op, first_name, process_set):
    """obj as a uint8 array; an object that cannot be pickled fails the first collective
    on the other ranks too (they would wait for this rank's bytes for ever)."""
    try:
        return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    except Exception as error:
        refuse(op, first_name, process_set, f"cannot pickle {type(obj).__name__}: {error}")
        raise


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """Returns root_rank's `obj` on every rank (root_rank gets its own object back)."""
    from .basics import process_set_id
    from ._capi import lib
    name = name or type(obj).__name__
    is_root = lib.hvd_rank() == root_rank  # root_rank is a global rank, as in Horovod
    payload = _pickled(obj, "broadcast", f"{name}.size", process_set) if is_root else None
    length = np.array([payload.size if is_root else 0], dtype=np.int64)
    collectives.broadcast_(length, root_rank, f"{name}.size", process_set)
    data = payload.copy() if is_root else np.empty(int(length[0]), dtype=np.uint8)
    collectives.broadcast_(data, root_rank, f"{name}.data", process_set)
    return obj if is_root else pickle.loads(data.tobytes())


def allgather_object(obj, name=None, process_set=None):
    """Returns the list of every rank's `obj`, in rank order of the process set."""
    name = name or type(obj).__name__
    payload = _pickled(obj, "allgather", f"{name}.sizes", process_set)
    sizes = collectives.allgather(np.array([payload.size], dtype=np.int64), f"{name}.sizes",
                                  process_set)
    data = collectives.allgather(payload, f"{name}.data", process_set)
    out, offset = [], 0
    for size in sizes.tolist():
        out.append(pickle.loads(data[offset:offset + size].tobytes()))
        offset += size
    return out
