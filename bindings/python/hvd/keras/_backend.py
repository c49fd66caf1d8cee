"""The Keras 3 backend under hvd.keras, and the collectives of its tensors.

Keras 3 runs on JAX, TensorFlow or PyTorch; the gradients a Keras optimizer applies
are that backend's tensors. hvd.keras reduces them with hvd.tensorflow on the
TensorFlow backend and with hvd.torch on the torch backend. JAX is refused: Keras 3
applies gradients there in a jitted, stateless step (stateless_apply inside jax.jit),
where no host collective can run, and JAX's own data parallelism (keras.distribution)
already serves it.
"""
import keras

SUPPORTED = ("tensorflow", "torch")


def name():
    """The running Keras backend, if hvd.keras supports it; else a clear error."""
    backend = keras.backend.backend()
    if backend not in SUPPORTED:
        raise NotImplementedError(
            f"hvd.keras (horovod.keras, horovod.tensorflow.keras) runs on the Keras "
            f"backends {', '.join(SUPPORTED)}, not {backend!r}: Keras applies gradients "
            "inside a jitted, stateless step on JAX, where libhvd's host collectives "
            "cannot run. Set KERAS_BACKEND=tensorflow or KERAS_BACKEND=torch, or use "
            "keras.distribution for data parallelism on JAX.")
    return backend


def ops():
    """hvd.tensorflow or hvd.torch, for the running backend."""
    if name() == "tensorflow":
        from .. import tensorflow as module
    else:
        from .. import torch as module
    return module


def check_not_xla():
    """On TensorFlow, refuses a step compiled by XLA (Keras's jit_compile, on by default
    where there is a GPU): the collectives run as host functions, which XLA cannot
    compile; its own error names only a 'PyFunc' kernel."""
    if name() != "tensorflow":
        return
    import tensorflow as tf
    try:
        from tensorflow.python.ops.control_flow_util import GraphOrParentsInXlaContext
    except ImportError:  # a TensorFlow that moved it: XLA's own error then
        return
    if not tf.executing_eagerly() and GraphOrParentsInXlaContext(
            tf.compat.v1.get_default_graph()):
        raise RuntimeError(
            "hvd.keras: the training step is compiled by XLA, which cannot run libhvd's "
            "collectives (host functions); pass jit_compile=False to model.compile() "
            "(Keras turns XLA on by default where there is a GPU)")


def is_sparse(tensor):
    """True for TensorFlow's tf.IndexedSlices (the gradient of an embedding lookup)."""
    return type(tensor).__name__ == "IndexedSlices"


def densified(tensor):
    """A dense tensor of the same value (tf.IndexedSlices scattered into zeros)."""
    if is_sparse(tensor):
        import tensorflow as tf
        return tf.convert_to_tensor(tensor)
    return tensor


def grouped_allreduce(tensors, op, prescale_factor, postscale_factor, process_set):
    """The tensors reduced over the process set, as one unit per dtype, in their order.
    tf.IndexedSlices are allgathered (values and indices), as Horovod does."""
    if not tensors:
        return []
    if name() == "tensorflow":
        from ..tensorflow import grouped_allreduce as tf_grouped_allreduce
        # one call into libhvd for every dtype of the list (hvd.tensorflow groups them)
        return tf_grouped_allreduce(list(tensors), op=op, prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor,
                                    process_set=process_set)
    from ..torch import grouped_allreduce_async, synchronize
    # one call for every dtype of the list (hvd.torch groups them)
    return list(synchronize(grouped_allreduce_async(
        [t.contiguous() for t in tensors], op=op, prescale_factor=prescale_factor,
        postscale_factor=postscale_factor, process_set=process_set)))
