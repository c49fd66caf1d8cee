"""horovod.common.util on libhvd: the helpers scripts and tests import from it."""
import contextlib
import os

import hvd as _hvd


@contextlib.contextmanager
def env(**kwargs):
    """Sets environment variables (values converted with str) for the duration of the
    block, then restores the previous values."""
    saved = {k: os.environ.get(k) for k in kwargs}
    os.environ.update({k: str(v) for k, v in kwargs.items()})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def mpi_built(verbose=False):
    return _hvd.mpi_built()


def gloo_built(verbose=False):
    return False


def nccl_built(verbose=False):
    return _hvd.nccl_built()


def ddl_built(verbose=False):
    return False


def ccl_built(verbose=False):
    return False


def gpu_available(ext_base_name=None, verbose=False):
    return _hvd.cuda_built()


def extension_available(ext_base_name, verbose=False):
    """True for the frameworks libhvd's stand-in provides (torch), else False."""
    return ext_base_name.split(".")[-1] == "torch"


def num_rank_is_power_2(num_rank):
    return num_rank > 0 and (num_rank & (num_rank - 1)) == 0


def split_list(items, n):
    """`items` cut into n consecutive parts of sizes differing by at most one."""
    d, r = divmod(len(items), n)
    return [items[i * d + min(i, r):(i + 1) * d + min(i + 1, r)] for i in range(n)]


def is_iterable(x):
    try:
        iter(x)
    except TypeError:
        return False
    return True


def check_installed_version(name, version, exception=None):
    """Horovod compares a framework's version with its build's; libhvd has nothing to
    compare (it binds at run time), so this accepts every version."""
    return None


def get_average_backwards_compatibility_fun(reduce_ops):
    """Horovod's helper resolving the deprecated `average` argument into an op."""
    def impl(op, average):
        if op is not None:
            if average is not None:
                raise ValueError("The op parameter supersedes average. Please provide only one.")
            return op
        if average is not None:
            return reduce_ops.Average if average else reduce_ops.Sum
        return reduce_ops.Average
    return impl


def is_version_greater_equal_than(ver, target):
    """Whether version string `ver` is at least `target` (Horovod's helper)."""
    from packaging import version
    if not isinstance(ver, str) or not isinstance(target, str):
        raise ValueError(f"is_version_greater_equal_than takes two strings, not "
                         f"{type(ver).__name__} and {type(target).__name__}")
    return version.parse(ver) >= version.parse(target)
