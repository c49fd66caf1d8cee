"""hvd_dtype_t values and their numpy counterparts.

numpy has no bfloat16; a bfloat16 tensor travels as 16-bit raw data (a uint16 array,
or a bfloat16 array from ml_dtypes) with dtype=hvd.bfloat16 given to the operation.
"""
import numpy as np

from .errors import DtypeError

UINT8, INT8, UINT16, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, BOOL = range(11)

NAMES = {
    UINT8: "uint8", INT8: "int8", UINT16: "uint16", INT16: "int16", INT32: "int32",
    INT64: "int64", FLOAT16: "float16", BFLOAT16: "bfloat16", FLOAT32: "float32",
    FLOAT64: "float64", BOOL: "bool",
}

ITEMSIZE = {
    UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, INT32: 4, INT64: 8, FLOAT16: 2, BFLOAT16: 2,
    FLOAT32: 4, FLOAT64: 8, BOOL: 1,
}

_FROM_NUMPY = {
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int8): INT8,
    np.dtype(np.uint16): UINT16,
    np.dtype(np.int16): INT16,
    np.dtype(np.int32): INT32,
    np.dtype(np.int64): INT64,
    np.dtype(np.float16): FLOAT16,
    np.dtype(np.float32): FLOAT32,
    np.dtype(np.float64): FLOAT64,
    np.dtype(np.bool_): BOOL,
}

_BY_NAME = {name: code for code, name in NAMES.items()}


class bfloat16_marker:
    """Passed as dtype= to treat 16-bit raw data as bfloat16."""

    code = BFLOAT16

    def __repr__(self):
        return "hvd.bfloat16"


bfloat16 = bfloat16_marker()


def from_numpy(dtype, override=None):
    """The hvd_dtype_t for a numpy dtype, or for the override (an hvd dtype code,
    a name such as "bfloat16", or hvd.bfloat16). Raises hvd.errors.DtypeError (a TypeError
    and a ValueError) for others."""
    dtype = np.dtype(dtype)
    if override is not None:
        code = _override_code(override)
        if ITEMSIZE[code] != dtype.itemsize:
            raise TypeError(
                f"dtype override {NAMES[code]} needs {ITEMSIZE[code]}-byte elements, but the "
                f"array holds {dtype} ({dtype.itemsize} bytes)")
        return code
    if dtype.name == "bfloat16":  # ml_dtypes.bfloat16
        return BFLOAT16
    try:
        return _FROM_NUMPY[dtype]
    except KeyError:
        raise DtypeError(
            f"libhvd has no element type for numpy {dtype}; supported: "
            + ", ".join(NAMES.values())) from None


def _override_code(override):
    if isinstance(override, bfloat16_marker):
        return BFLOAT16
    if isinstance(override, str):
        if override not in _BY_NAME:
            raise TypeError(f"unknown dtype name {override!r}; use one of {list(_BY_NAME)}")
        return _BY_NAME[override]
    if isinstance(override, int) and override in NAMES:
        return override
    return from_numpy(override)
