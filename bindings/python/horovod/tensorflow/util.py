"""horovod.tensorflow.util on libhvd: the helpers Horovod's TensorFlow code and tests
import from here."""
import tensorflow as tf


def _executing_eagerly():
    """Whether TensorFlow runs eagerly here (not inside a tf.function's graph)."""
    return tf.executing_eagerly()


def vars_to_refs(variables):
    """Hashable references to variables (a tf.Variable is not hashable in TF 2)."""
    if isinstance(variables, list):
        return [v.ref() for v in variables]
    return variables.ref()


def refs_to_vars(refs):
    """The variables behind vars_to_refs' references."""
    if isinstance(refs, list):
        return [r.deref() for r in refs]
    return refs.deref()
