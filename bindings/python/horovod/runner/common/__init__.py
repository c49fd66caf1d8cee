"""horovod.runner.common on libhvd: the helpers Horovod's scripts and tests import."""
