"""horovod.common.elastic on libhvd: Horovod's state classes and run_fn (hvd.elastic
says how an elastic job runs on MPI)."""
from hvd.elastic import HostUpdateResult, ObjectState, State, run_fn  # noqa: F401
