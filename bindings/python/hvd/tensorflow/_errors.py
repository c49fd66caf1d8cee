"""libhvd's errors as TensorFlow's error types, as Horovod's TensorFlow ops raise them.

A TensorFlow user catches tf.errors.*: Horovod reports ranks that disagree (shape,
dtype, root) as tf.errors.FailedPreconditionError, bad arguments as
tf.errors.InvalidArgumentError, and any other failure of a collective as
tf.errors.UnknownError (what horovod.tensorflow.elastic watches for).

Executing eagerly the error raised is both: the TensorFlow type and the HvdError
subclass (hvd.MismatchError, ...), so handlers written for either catch it. Inside a
graph TensorFlow's runtime builds the error from a status code; an exception leaving a
numpy_function becomes InvalidArgument (ValueError, TypeError), Unimplemented
(NotImplementedError), ResourceExhausted (MemoryError) or Unknown (anything else),
which is the mapping below except for FailedPrecondition: graph_failure() makes that
one with an op of its own.
"""
import functools

import tensorflow as tf

from .. import errors

# HvdError kinds whose TensorFlow type is not the one a numpy_function's exception gets.
_FAILED_PRECONDITION = (errors.MismatchError, errors.NotInitializedError)


def tf_error_class(error):
    """The tf.errors class Horovod raises for `error` (an HvdError or a builtin)."""
    if isinstance(error, _FAILED_PRECONDITION):
        return tf.errors.FailedPreconditionError
    if isinstance(error, (ValueError, TypeError)):
        return tf.errors.InvalidArgumentError
    if isinstance(error, NotImplementedError):
        return tf.errors.UnimplementedError
    if isinstance(error, MemoryError):
        return tf.errors.ResourceExhaustedError
    return tf.errors.UnknownError


class _NoArgumentInit:
    # Sits between OpError and the HvdError class in a combined class's MRO: OpError's
    # __init__ calls its base's __init__ without arguments.
    def __init__(self):
        pass


@functools.lru_cache(maxsize=None)
def _combined_class(tf_class, hvd_class):
    return type(hvd_class.__name__, (tf_class, _NoArgumentInit, hvd_class),
                {"__module__": __name__, "__init__": _combined_init,
                 "_tf_code": _CODES[tf_class]})


def _combined_init(self, error):
    tf.errors.OpError.__init__(self, None, None, str(error), self._tf_code)
    Exception.__init__(self, str(error))
    self.status = getattr(error, "status", None)
    self.detail = getattr(error, "detail", str(error))
    self.function = getattr(error, "function", None)


def as_tf_error(error):
    """`error` (an HvdError, or a ValueError/TypeError of ours) as an exception of its
    tf.errors type that is also of its own type."""
    converted = _combined_class(tf_error_class(error), type(error))(error)
    converted.__cause__ = error.__cause__
    return converted


_CODES = {
    tf.errors.FailedPreconditionError: tf.errors.FAILED_PRECONDITION,
    tf.errors.InvalidArgumentError: tf.errors.INVALID_ARGUMENT,
    tf.errors.UnimplementedError: tf.errors.UNIMPLEMENTED,
    tf.errors.ResourceExhaustedError: tf.errors.RESOURCE_EXHAUSTED,
    tf.errors.UnknownError: tf.errors.UNKNOWN,
}


def needs_graph_failure(error):
    """Whether `error`, raised in a numpy_function, would reach the user as another
    type than its own: it must travel out as a message for graph_failure()."""
    return tf_error_class(error) is tf.errors.FailedPreconditionError


def graph_failure(message):
    """An op that fails with FailedPrecondition, carrying `message` (a scalar string
    tensor), when the message is not empty; a no-op otherwise.

    TensorFlow offers no op that fails with a chosen status. Reading a file below
    /dev/null fails with ENOTDIR, which TensorFlow's file system reports as
    FailedPrecondition with the path in the text: the path carries the message.
    """
    def fail():
        # A data dependency: ReadFile is stateless, a control dependency alone is pruned.
        path = tf.strings.join(["/dev/null/", message])
        return tf.strings.length(tf.io.read_file(path)) < 0
    return tf.cond(tf.strings.length(message) > 0, fail, lambda: tf.constant(True))
