"""VariablesState: framework variables and plain values, committed, restored and
synchronized together, the variables kept as numpy arrays (their bytes exactly).

The base of hvd.tensorflow.elastic's TensorFlowState and hvd.keras.elastic's
KerasState: each says how to list, read, assign and broadcast its variables; this
class keeps the saved arrays, writes them with the plain values at an elastic job's
commit and loads them back, checked against the variables they go into.
"""
import pickle

import numpy as np

from ._state import ObjectState, dumps_naming_attribute


class VariablesState(ObjectState):
    """An ObjectState that also holds variables.

    variables(): the variables, in the same order on every rank and in every
    generation; read(variable): its value as a numpy array; assign(variable, array):
    sets it; broadcast(variables): rank 0's values on every rank. Plain values are
    keyword arguments, as in ObjectState.

    sync() broadcasts rank 0's variables and values (or, in an elastic job, restores
    the newest commit) and saves them: the synchronized state is also the committed one."""

    def __init__(self, variables, read, assign, broadcast, bcast_object, get_rank, **kwargs):
        self._variables_of = variables
        self._read = read
        self._assign = assign
        self._broadcast_variables = broadcast
        self._saved_arrays = self._read_variables()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank, **kwargs)

    def save(self):
        self._saved_arrays = self._read_variables()
        super().save()

    def restore(self):
        variables = list(self._variables_of())
        _check_fits(self._saved_arrays, variables)
        for variable, array in zip(variables, self._saved_arrays):
            self._assign(variable, array)
        super().restore()

    def sync(self):
        if self._restore_newest_commit():
            return
        self._broadcast_variables(list(self._variables_of()))
        self._saved_arrays = self._read_variables()
        super().sync()

    def state_bytes(self):
        values = dumps_naming_attribute(self._saved_state, pickle.dumps)
        return pickle.dumps({"arrays": self._saved_arrays, "values": values},
                            protocol=pickle.HIGHEST_PROTOCOL)

    def load_state_bytes(self, data):
        saved = pickle.loads(data)
        _check_fits(saved["arrays"], list(self._variables_of()))
        self._saved_arrays = saved["arrays"]
        self._saved_state = {**self._saved_state, **pickle.loads(saved["values"])}
        self.restore()

    def _read_variables(self):
        # A copy: on some backends the array read shares the variable's memory, which
        # the next step changes.
        return [np.array(self._read(variable), copy=True) for variable in self._variables_of()]


def _check_fits(arrays, variables):
    """Raises ValueError, saying which, when the saved arrays are not the variables'
    count, shapes and dtypes (a model built differently from the one committed)."""
    if len(arrays) != len(variables):
        raise ValueError(
            f"hvd.elastic: the saved state holds {len(arrays)} variables but the state's "
            f"model and optimizer have {len(variables)}: build the same model (and the "
            "same optimizer, built) in every generation before the state is synchronized")
    for index, (array, variable) in enumerate(zip(arrays, variables)):
        shape = tuple(int(d) for d in variable.shape)
        dtype = _dtype_name(variable)
        if array.shape != shape or (dtype is not None and array.dtype.name != dtype):
            name = getattr(variable, "path", None) or getattr(variable, "name", index)
            raise ValueError(
                f"hvd.elastic: the saved state's variable {index} ({name}) is "
                f"{array.dtype.name}{list(array.shape)}, the variable is "
                f"{dtype}{list(shape)}: build the same model in every generation")


def _dtype_name(variable):
    """The variable's dtype as numpy names it, where it can be told."""
    dtype = getattr(variable, "dtype", None)
    dtype = getattr(dtype, "as_numpy_dtype", dtype)  # tf.DType
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None
