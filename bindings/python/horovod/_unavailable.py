"""Clear ImportErrors for the parts of Horovod that libhvd's stand-in does not provide.

A finder on sys.meta_path answers imports of those modules (horovod.mxnet, ...)
with why they are missing and what to do, instead of a bare "No module named".
"""
import importlib.abc
import sys

_MISSING = {
    "horovod.mxnet": "libhvd binds PyTorch and TensorFlow only",
    "horovod.spark": "libhvd launches jobs with hvdrun over MPI, not on Spark clusters",
    "horovod.ray": "libhvd launches jobs with hvdrun over MPI, not on Ray clusters",
}


def _message(fullname, top):
    return (f"{fullname} is not available in libhvd's horovod stand-in ({_MISSING[top]}); "
            "it provides horovod.torch, horovod.tensorflow, horovod.keras, "
            "horovod.tensorflow.keras (Keras 3), horovod.common and horovod.run. "
            "Install Horovod "
            "itself for the rest: it takes precedence over the stand-in.")


class _UnavailableFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        top = next((m for m in _MISSING if fullname == m or fullname.startswith(m + ".")),
                   None)
        if top is None:
            return None
        raise ImportError(_message(fullname, top), name=fullname)


def missing_attribute(package, attribute):
    """For a package's module __getattr__: the AttributeError for `attribute`, with
    the ImportError's words where it names a missing part (horovod.tensorflow in a
    Horovod script), so hasattr() stays False and the message says why."""
    fullname = f"{package}.{attribute}"
    if fullname in _MISSING:
        return AttributeError(_message(fullname, fullname), name=attribute)
    return AttributeError(f"module {package!r} has no attribute {attribute!r}",
                          name=attribute)


def install():
    if not any(isinstance(f, _UnavailableFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _UnavailableFinder())
