"""horovod.common.process_sets on libhvd."""
from hvd.basics import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                        remove_process_set)
