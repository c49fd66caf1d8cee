"""hvd._fastpath (hvd/_fastpath.c), the per-call path in C, bound to the libhvd that
_capi loaded. `fast` is that module, or None where it is not available: then the
ctypes declarations of _capi serve every call, with the same results (only slower).

Where it is looked for: HVD_FASTPATH (a file path; "0" turns the fast path off), then
inside the installed package, then beside the loaded library in a build tree
(<build>/lib/libhvd.so -> <build>/bindings/python/_fastpath*.so), which is how the
tests and the scripts run the source tree.
"""
import ctypes
import glob
import importlib.machinery
import importlib.util
import os

from ._capi import lib

_BOUND = ("hvd_allreduce_async", "hvd_broadcast_async", "hvd_grouped_allreduce_async",
          "hvd_poll", "hvd_wait")


def _load_file(path):
    loader = importlib.machinery.ExtensionFileLoader("hvd._fastpath", path)
    spec = importlib.util.spec_from_file_location("hvd._fastpath", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _beside_library():
    library = getattr(lib, "_name", None) or ""
    build = os.path.dirname(os.path.dirname(os.path.realpath(library)))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        found = glob.glob(os.path.join(build, "bindings", "python", "_fastpath" + suffix))
        if found:
            return found[0]
    return None


def _find():
    env = os.environ.get("HVD_FASTPATH", "")
    if env == "0":
        return None
    if env:
        return _load_file(env)  # named on purpose: a failure here is reported
    try:
        from . import _fastpath
        return _fastpath
    except ImportError:
        pass
    path = _beside_library()
    return _load_file(path) if path else None


def _bind():
    module = _find()
    if module is not None:
        module.bind(*[ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                      for name in _BOUND])
    return module


fast = _bind()
