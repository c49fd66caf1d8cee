"""Broadcasting Keras variables (a model's, an optimizer's) from one rank, on any
backend: the values travel as numpy arrays, all in flight at once, and are assigned
back; every rank ends with root_rank's bytes."""
import keras
import numpy as np

from .. import collectives
from ..basics import global_process_set


def broadcast_variables(variables, root_rank, process_set=global_process_set):
    """Assigns root_rank's values to `variables` (keras.Variable) on every rank.
    Call it eagerly (from a callback or between fits), the same on every rank."""
    variables = list(variables)
    started = []
    for variable in variables:
        value = np.ascontiguousarray(keras.ops.convert_to_numpy(variable.value))
        started.append(collectives.broadcast_async(value, root_rank, None, process_set))
    for variable, handle in zip(variables, started):
        variable.assign(handle.wait().reshape(tuple(variable.shape)))


def model_variables(model):
    """The model's variables and, where it has one, its optimizer's (built first, so
    that its slots exist on every rank before they are broadcast)."""
    variables = list(model.variables)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        if not optimizer.built and model.trainable_variables:
            optimizer.build(model.trainable_variables)
        variables += list(optimizer.variables)
    return variables
