"""libhvd's errors out of a TensorFlow graph.

Inside tf.function (Keras's compiled step too) a collective runs as a
tf.numpy_function, and an HvdError it raises reaches the caller as a
tf.errors.OpError whose message carries the Python exception's class name, its text
and the traceback through hvd. hvd.tensorflow.elastic.run turns it back into that
HvdError, so that a failed collective ends an elastic generation as a failed
collective (status 76, the peers' fault) and not as this rank's failure.
"""
import os
import re

from .. import errors

_HVD_FRAME = f"{os.sep}hvd{os.sep}"


def _names():
    """The statuses of libhvd's errors, by the names of their classes."""
    return {kind.__name__: status for status, kind in errors._BY_STATUS.items()}


def hvd_error_in(op_error):
    """The HvdError a graph's collective raised, as an HvdError of its class; None when
    `op_error` did not come from libhvd."""
    message = getattr(op_error, "message", None) or str(op_error)
    names = _names()
    alternatives = "|".join(re.escape(name) for name in names)
    # A FailedPrecondition made by _errors.graph_failure: the path read below /dev/null
    # carries "<class>: <text>", and TensorFlow adds why the read failed.
    found = re.search(r"/dev/null/(%s): (.*?)(?:; Not a directory)?$" % alternatives, message,
                      re.MULTILINE)
    if found is None and _HVD_FRAME not in message:
        return None
    if found is None:  # an exception that left the numpy_function: its traceback's text
        found = re.search(r"^(%s): (.*)$" % alternatives, message, re.MULTILINE)
    if found is None:
        return None
    return errors.error_for(names[found.group(1)], detail=found.group(2))
