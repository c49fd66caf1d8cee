"""Horovod's exception classes, for code that catches them by these names.

HorovodInternalError is libhvd's HvdError (a RuntimeError, as Horovod's is): every
failed collective raises a subclass of it. HostsUpdatedInterrupt is hvd.elastic's,
raised in an elastic job when hosts change. HorovodVersionMismatchError is never
raised (libhvd binds to frameworks at run time); it exists so that handlers naming it
keep importing.
"""
from hvd.elastic import HostsUpdatedInterrupt  # noqa: F401
from hvd.errors import HvdError as HorovodInternalError  # noqa: F401


class HorovodVersionMismatchError(ImportError):
    """Horovod raises it when a framework's version differs from the one it was built
    against; libhvd binds to frameworks at run time, so it is never raised."""

    def __init__(self, name, version, installed_version):
        super().__init__(f"framework {name} has version {version}, expected "
                         f"{installed_version}")
        self.name = name
        self.version = version
        self.installed_version = installed_version
