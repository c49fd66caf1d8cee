"""Horovod's exception classes, for code that catches them by these names.

HorovodInternalError is libhvd's HvdError (a RuntimeError, as Horovod's is): every
failed collective raises a subclass of it. The other two are never raised by libhvd
(it has no elastic mode and checks no framework versions); they exist so that handlers
naming them keep importing.
"""
from hvd.errors import HvdError as HorovodInternalError  # noqa: F401


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's elastic mode signals a change of hosts with it; libhvd has no
    elastic mode, so it is never raised."""

    def __init__(self, skip_sync=False):
        super().__init__("the set of hosts changed")
        self.skip_sync = skip_sync


class HorovodVersionMismatchError(ImportError):
    """Horovod raises it when a framework's version differs from the one it was built
    against; libhvd binds to frameworks at run time, so it is never raised."""

    def __init__(self, name, version, installed_version):
        super().__init__(f"framework {name} has version {version}, expected "
                         f"{installed_version}")
        self.name = name
        self.version = version
        self.installed_version = installed_version
