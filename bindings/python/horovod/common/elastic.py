"""horovod.common.elastic on libhvd: Horovod's state classes for jobs of a fixed size
(hvd.elastic says what that means)."""
from hvd.elastic import ObjectState, State, run_fn  # noqa: F401
