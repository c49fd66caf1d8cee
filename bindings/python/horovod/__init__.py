"""Stand-in for Horovod, backed by libhvd: `import horovod.torch as hvd` runs a
Horovod PyTorch script unchanged where Horovod itself is not installed.

Precedence: if a real Horovod is importable from any other sys.path entry, this
package steps aside and loads it instead, so it never shadows a real installation.
HVD_HOROVOD_COMPAT=force uses libhvd even then; HVD_HOROVOD_COMPAT=off makes this
package unimportable (as if libhvd had not installed it).
"""
import importlib.machinery
import importlib.util
import os
import sys

_MODE = os.environ.get("HVD_HOROVOD_COMPAT", "auto").lower()
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _real_horovod_spec():
    """The spec of a `horovod` package found on sys.path outside this directory."""
    for entry in sys.path:
        path = os.path.abspath(entry or os.getcwd())
        if path == _HERE or not os.path.isdir(path):
            continue
        spec = importlib.machinery.PathFinder.find_spec(__name__, [path])
        if spec is not None and spec.origin not in (None, "namespace"):
            return spec
    return None


if _MODE not in ("auto", "force", "off"):
    raise ImportError(f"HVD_HOROVOD_COMPAT={_MODE!r}: use auto, force or off")
if _MODE == "off":
    raise ImportError("libhvd's horovod stand-in is disabled (HVD_HOROVOD_COMPAT=off)")

_real = _real_horovod_spec() if _MODE == "auto" else None
if _real is not None:
    # Replace this module by the real Horovod; the import system returns whatever
    # sys.modules holds once this body finishes, and submodules load from its path.
    _module = importlib.util.module_from_spec(_real)
    sys.modules[__name__] = _module
    _real.loader.exec_module(_module)
else:
    import hvd as _hvd

    from ._unavailable import install as _install_unavailable
    _install_unavailable()

    # The Horovod release whose Python API this stand-in follows.
    __version__ = "0.28.1"
    __libhvd_version__ = _hvd.version_string()
    backend = "libhvd"

    def __getattr__(name):
        # horovod.mxnet, horovod.spark...: say why they are missing.
        from ._unavailable import missing_attribute
        raise missing_attribute(__name__, name)

    def run(*args, **kwargs):
        """horovod.run(func, args=(), kwargs=None, np=1, ...): see horovod.runner.run."""
        from .runner import run as _run
        return _run(*args, **kwargs)
