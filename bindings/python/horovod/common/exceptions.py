"""Horovod's exception names, mapped onto libhvd's."""
from hvd.errors import HvdError as HorovodInternalError  # noqa: F401
