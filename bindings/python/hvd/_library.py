"""Finds and loads libhvd.

Search order: the HVD_LIBRARY environment variable (a file path), the library
installed with this package (recorded at install time in _install_paths.py: relative
to the package, then where it was installed), the one inside the package (a wheel), a
build tree next to the source checkout, then the system's dynamic loader. The library
is opened with RTLD_GLOBAL so that MPI's dynamically loaded plugins can resolve MPI
symbols, and so that mpi4py and libhvd share one MPI.
"""
import ctypes
import ctypes.util
import glob
import os

_SONAME = "libhvd.so.0"


def _installed_candidates():
    try:
        from . import _install_paths  # written by meson install
    except ImportError:
        return []
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.normpath(os.path.join(here, _install_paths.LIBDIR_FROM_PACKAGE, _SONAME))]
    if _install_paths.LIBDIR:
        paths.append(os.path.join(_install_paths.LIBDIR, _SONAME))
    return paths


# The sonames of each MPI's C library, as a libhvd built against it names them.
_MPI_SONAMES = {"mpich": b"libmpich.so", "openmpi": b"libmpi.so.40"}


def _launcher_mpi():
    """The MPI whose launcher started this process (its environment says), or None."""
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        return "openmpi"
    if "PMI_SIZE" in os.environ or "HYDRA_CONTROL_FD" in os.environ:
        return "mpich"
    return None


def _linked_mpi(path):
    """Which MPI a libhvd file was linked against (its dynamic section names it)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    for flavour, soname in _MPI_SONAMES.items():
        if soname in data:
            return flavour
    return None


def _build_tree_candidates():
    # bindings/python/hvd -> repository root; any meson build directory in it. A
    # checkout often holds builds for both MPIs (scripts/run-tests.sh makes build/ and
    # build-openmpi/): the one linked against the MPI that launched this process comes
    # first, since the other would make every rank a job of its own; then build/.
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    found = glob.glob(os.path.join(root, "build*", "lib", _SONAME))
    launcher = _launcher_mpi()

    def rank(path):
        matches = launcher is not None and _linked_mpi(path) == launcher
        is_default = os.path.basename(os.path.dirname(os.path.dirname(path))) == "build"
        return (not matches, not is_default, path)

    return sorted(found, key=rank)


def candidate_paths():
    """Paths tried, in order (the last entries are names for the system loader)."""
    paths = []
    env = os.environ.get("HVD_LIBRARY")
    if env:
        return [env]
    paths += _installed_candidates()
    # Inside the package: a wheel's libhvd.so (a wheel keeps no versioned links).
    paths += [os.path.join(os.path.dirname(__file__), name) for name in (_SONAME, "libhvd.so")]
    paths += _build_tree_candidates()
    system = ctypes.util.find_library("hvd")
    paths += [system] if system else []
    paths += [_SONAME]
    return paths


def load():
    """Returns the loaded ctypes.CDLL, or raises ImportError listing what was tried."""
    tried = []
    env_set = bool(os.environ.get("HVD_LIBRARY"))
    for path in candidate_paths():
        is_file_path = os.sep in path
        if is_file_path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            tried.append(f"{path} ({exc})")
            if env_set:
                break
    raise ImportError(
        "hvd: cannot load libhvd. Set HVD_LIBRARY to the path of libhvd.so, or install "
        "libhvd (meson install). Tried: " + "; ".join(tried))
