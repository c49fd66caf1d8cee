"""horovod.common on libhvd (the parts that training scripts import)."""
