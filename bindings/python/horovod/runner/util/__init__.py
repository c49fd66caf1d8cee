"""horovod.runner.util on libhvd."""
