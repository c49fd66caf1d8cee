"""horovod.common.elastic on libhvd: Horovod's state classes and run_fn (hvd.elastic
says how an elastic job runs on MPI)."""
from hvd.elastic import ObjectState, State, run_fn  # noqa: F401
from hvd.elastic._host_update import HostUpdateResult  # noqa: F401
