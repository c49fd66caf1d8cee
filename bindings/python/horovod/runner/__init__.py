"""horovod.runner on libhvd: horovod.run (functions on N processes, through hvdrun)
and the utilities Horovod's tests import. The command-line launcher is libhvd's
`hvdrun` (horovodrun's options); Horovod's Python launcher internals (Gloo, elastic
drivers, Spark/Ray) are not provided."""
from .function_launch import run  # noqa: F401
