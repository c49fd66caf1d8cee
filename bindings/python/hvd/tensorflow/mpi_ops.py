"""Horovod's TensorFlow collectives on tf.Tensors, eagerly and inside tf.function, with
Horovod's gradients: allreduce's is an allreduce, allgather's this rank's rows of an
averaged allreduce, broadcast's an averaged allreduce kept on the root, alltoall's an
alltoall back, reducescatter's an allgather.

`name` identifies an operation across ranks. Executing eagerly, None auto-names it by
call order, so unnamed calls must be made in the same order on every rank. Inside a
graph (tf.function, or TF1's graph mode) TensorFlow may run independent operations in
any order, and not the same on every rank: there an unnamed operation is named after
its input tensor, as Horovod names it, the same on every rank. A gradient of a named
operation is named "<name>.grad".
"""
import numpy as np
import tensorflow as tf

from .. import basics, collectives
from ..basics import Average, Sum, global_process_set, rank
from . import _bridge
from ._reused_outputs import ReusedOutputs
from .compression import Compression

__all__ = ["allreduce", "grouped_allreduce", "allgather", "grouped_allgather", "broadcast",
           "broadcast_", "grouped_broadcast", "alltoall", "reducescatter",
           "grouped_reducescatter", "join"]


def _grad_name(name):
    return None if name is None else f"{name}.grad"


def _graph_named(kind, name, tensor):
    """`name`, or inside a graph the name Horovod gives an unnamed operation there."""
    if name is not None or tf.executing_eagerly():
        return name
    # unique in the graph: two collectives of one tensor (a value and its gradient's
    # allgather, say) get two names, the same on every rank, as every rank builds the
    # same graph in the same order.
    base = "Horovod{}_{}".format(kind, tensor.name.replace(":", "_").replace("/", "_"))
    return tf.compat.v1.get_default_graph().unique_name(base)


def _process_set(process_set):
    return global_process_set if process_set is None else process_set


def _known(process_set):
    """`process_set`, checked while the operation is built: a set that is not
    registered, or that libhvd does not know, is Horovod's ValueError then rather than
    an error when a graph runs."""
    if isinstance(process_set, basics.ProcessSet) and process_set is not global_process_set:
        process_set._id()  # ValueError when never registered
        process_set.size()  # ValueError when libhvd does not know it
    return process_set


# --- allreduce ----------------------------------------------------------------------

def _dense_allreduce(tensor, op, prescale_factor, postscale_factor, name, process_set):
    @tf.custom_gradient
    def forward(x):
        # Inside a graph the op reduces into arrays it reuses (_reused_outputs.py).
        outputs = None if tf.executing_eagerly() else ReusedOutputs()

        def reduce(array):
            out = None if outputs is None else outputs.take(array.shape, array.dtype)
            return [collectives.allreduce(array, op, name, prescale_factor, postscale_factor,
                                          process_set, out=out)]
        y, = _bridge.run(reduce, [x], [x.dtype])

        def grad(dy):
            return _dense_allreduce(dy, op, prescale_factor, postscale_factor,
                                    _grad_name(name), process_set)
        return _bridge.with_shape(y, x.shape), grad
    return forward(tf.convert_to_tensor(tensor))


def _sparse_allreduce(slices, op, prescale_factor, postscale_factor, process_set):
    """An allreduce of the tensor that tf.IndexedSlices represent, as Horovod does it:
    allgathers of the values and of the indices (duplicates add up when applied)."""
    if op not in (Sum, Average):
        raise NotImplementedError("only Sum and Average allreduce tf.IndexedSlices; pass "
                                  "sparse_as_dense=True (or densify them) for other ops")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("prescale_factor and postscale_factor are not supported "
                                  "with tf.IndexedSlices")
    values = allgather(slices.values, process_set=process_set)
    indices = allgather(slices.indices, process_set=process_set)
    if op == Average:
        values = values / tf.cast(_process_set(process_set).size(), values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def allreduce(tensor, average=None, device_dense='', device_sparse='',
              compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """Reduces a tf.Tensor (or tf.Variable) over the ranks; a tf.IndexedSlices is
    allgathered instead (values and indices). op: Average (default), Sum, Min, Max,
    Product, Adasum. Device arguments are accepted for Horovod's signature: the
    reduction runs on host memory."""
    process_set = _known(process_set)
    op = _op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = _graph_named("Allreduce", name, tensor)
    compressed, ctx = compression.compress(tensor)
    reduced = _dense_allreduce(compressed, op, prescale_factor, postscale_factor, name,
                               process_set)
    return compression.decompress(reduced, ctx)


def _op(op, average):
    """Horovod's `average` argument (deprecated) folded into `op`; Average by default."""
    if op is not None and average is not None:
        raise ValueError("allreduce: give op or average, not both (average is deprecated)")
    if op is None:
        return Sum if average is False else Average
    return op


def _grouped_by_dtype(arrays, name, start):
    """Runs a grouped operation over `arrays` as one libhvd group per dtype (a group
    holds one dtype), all started before any is waited for: start(members, group_name,
    indices) returns a Handle, indices being the members' places in `arrays`. The
    results in the order of `arrays`."""
    by_dtype = {}
    for index, array in enumerate(arrays):
        by_dtype.setdefault(np.dtype(array.dtype), []).append(index)
    handles = []
    for dtype, indices in by_dtype.items():
        group_name = None if name is None else f"{name}.{dtype.name}"
        handles.append((indices, start([arrays[i] for i in indices], group_name, indices)))
    results = [None] * len(arrays)
    for indices, handle in handles:
        for i, result in zip(indices, handle.wait()):
            results[i] = result
    return results


def _dense_grouped_allreduce(tensors, op, prescale_factor, postscale_factor, name,
                             process_set):
    @tf.custom_gradient
    def forward(*xs):
        # Inside a graph each member reduces into arrays it reuses, as allreduce's do.
        outputs = None if tf.executing_eagerly() else {}

        def reduce(*arrays):
            def start(members, group_name, indices):
                outs = None if outputs is None else [
                    outputs.setdefault(i, ReusedOutputs()).take(m.shape, m.dtype)
                    for i, m in zip(indices, members)]
                return collectives.grouped_allreduce_async(
                    members, op, group_name, prescale_factor, postscale_factor,
                    process_set, outs=outs)
            return _grouped_by_dtype(arrays, name, start)
        ys = _bridge.run(reduce, xs, [x.dtype for x in xs])
        ys = [_bridge.with_shape(y, x.shape) for x, y in zip(xs, ys)]

        def grad(*dys):
            return _dense_grouped_allreduce(list(dys), op, prescale_factor, postscale_factor,
                                            _grad_name(name), process_set)
        return ys, grad
    return list(forward(*[tf.convert_to_tensor(t) for t in tensors]))


def grouped_allreduce(tensors, average=None, device_dense='', device_sparse='',
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set, name=None,
                      ignore_name_scope=False):
    """Allreduces a list of tensors as one unit: one call into libhvd (one grouped
    operation per dtype) for all dense tensors; tf.IndexedSlices are allgathered."""
    process_set = _known(process_set)
    op = _op(op, average)
    tensors = list(tensors)
    results = [None] * len(tensors)
    dense, contexts = [], []
    for i, tensor in enumerate(tensors):
        if isinstance(tensor, tf.IndexedSlices):
            results[i] = _sparse_allreduce(tensor, op, prescale_factor, postscale_factor,
                                           process_set)
        else:
            compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
            dense.append((i, compressed))
            contexts.append(ctx)
    if dense:
        name = _graph_named("GroupedAllreduce", name, dense[0][1])
        reduced = _dense_grouped_allreduce([t for _, t in dense], op, prescale_factor,
                                           postscale_factor, name, process_set)
        for (i, _), ctx, tensor in zip(dense, contexts, reduced):
            results[i] = compression.decompress(tensor, ctx)
    return results


# --- allgather ----------------------------------------------------------------------

def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenation of every rank's tensor along the first dimension, in rank order
    (first dimensions may differ between ranks)."""
    process_set = _known(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = _graph_named("Allgather", name, tensor)

    @tf.custom_gradient
    def forward(x):
        def gather(array):
            return [collectives.allgather(array, name, process_set)]
        y, = _bridge.run(gather, [x], [x.dtype])

        def grad(dy):
            return _allgather_grad(x, dy, name, process_set)
        return _bridge.with_shape(y, _bridge.rows_shape(x.shape)), grad
    return forward(tf.convert_to_tensor(tensor))


def _allgather_grad(x, dy, name, process_set):
    """This rank's rows of the averaged gradient."""
    reduced = _dense_allreduce(dy, Average, 1.0, 1.0, _grad_name(name), process_set)
    first_dim = tf.reshape(tf.shape(tf.reshape(x, [-1]) if x.shape.rank == 0 else x,
                                    out_type=tf.int64)[0], [1])
    dims = allgather(first_dim, None if name is None else f"{name}.grad.dims",
                     process_set=process_set)
    set_rank = _process_set(process_set).rank()
    begin = tf.reduce_sum(dims[:set_rank])
    return tf.reshape(reduced[begin:begin + dims[set_rank]], tf.shape(x))


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """Allgathers a list of tensors as one unit (one call into libhvd per dtype); each
    result is the concatenation of every rank's tensor, first dimensions may differ."""
    process_set = _known(process_set)
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []
    name = _graph_named("GroupedAllgather", name, tensors[0])

    @tf.custom_gradient
    def forward(*xs):
        def gather(*arrays):
            return _grouped_by_dtype(arrays, name, lambda members, group_name, _:
                                     collectives.grouped_allgather_async(
                                         members, group_name, process_set))
        ys = _bridge.run(gather, xs, [x.dtype for x in xs])
        ys = [_bridge.with_shape(y, _bridge.rows_shape(x.shape)) for x, y in zip(xs, ys)]

        def grad(*dys):
            return _grouped_allgather_grad(xs, dys, name, process_set)
        return ys, grad
    return list(forward(*tensors))


def _grouped_allgather_grad(xs, dys, name, process_set):
    """Each input's rows of its averaged gradient: one grouped allreduce, and one
    allgather of every input's first dimension."""
    reduced = _dense_grouped_allreduce(list(dys), Average, 1.0, 1.0, _grad_name(name),
                                       process_set)
    first_dims = tf.stack([tf.shape(x, out_type=tf.int64)[0] if x.shape.rank != 0
                           else tf.constant(1, tf.int64) for x in xs])
    set_size = _process_set(process_set).size()
    dims = tf.reshape(allgather(first_dims, None if name is None else f"{name}.grad.dims",
                                process_set=process_set), [set_size, len(xs)])
    set_rank = _process_set(process_set).rank()
    grads = []
    for i, (x, g) in enumerate(zip(xs, reduced)):
        begin = tf.reduce_sum(dims[:set_rank, i])
        grads.append(tf.reshape(g[begin:begin + dims[set_rank, i]], tf.shape(x)))
    return grads


# --- broadcast ----------------------------------------------------------------------

def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """root_rank's tensor (a global rank, as in Horovod) on every rank."""
    process_set = _known(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = _graph_named("Broadcast", name, tensor)

    @tf.custom_gradient
    def forward(x):
        def bcast(array):
            # reshaped: numpy returns a 0-d array as one row
            return [collectives.broadcast(array, root_rank, name, process_set)
                    .reshape(array.shape)]
        y, = _bridge.run(bcast, [x], [x.dtype])

        def grad(dy):
            reduced = _dense_allreduce(dy, Average, 1.0, 1.0, _grad_name(name), process_set)
            return reduced if rank() == root_rank else reduced * 0
        return _bridge.with_shape(y, x.shape), grad
    return forward(tf.convert_to_tensor(tensor))


def grouped_broadcast(tensors, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensors on every rank, all in one call into libhvd (no gradient:
    for assigning variables). Member i is named "<name>.<i>"."""
    process_set = _known(process_set)
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []
    name = _graph_named("GroupedBroadcast", name, tensors[0])

    def bcast(*arrays):
        handles = [collectives.broadcast_async(a, root_rank,
                                               None if name is None else f"{name}.{i}",
                                               process_set)
                   for i, a in enumerate(arrays)]
        return [h.wait().reshape(a.shape) for h, a in zip(handles, arrays)]
    outs = _bridge.run(bcast, tensors, [t.dtype for t in tensors])
    return [_bridge.with_shape(y, x.shape) for x, y in zip(tensors, outs)]


def read_variable(variable):
    """The value of a tf.Variable (a TF1 reference variable included) or of a Keras 3
    variable, which has no read_value()."""
    if hasattr(variable, "read_value"):
        return variable.read_value()
    return tf.convert_to_tensor(variable)


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Assigns root_rank's values to `variables` (tf.Variable, resource or TF1
    reference variables) on every rank, all in one call into libhvd; returns their
    values once assigned, as Horovod does."""
    process_set = _known(process_set)
    variables = list(variables)
    values = grouped_broadcast([read_variable(v) for v in variables], root_rank, name=name,
                               process_set=process_set)
    assignments = [v.assign(value) for v, value in zip(variables, values)]
    if tf.executing_eagerly():
        return [read_variable(v) for v in variables]
    with tf.control_dependencies([a.op if hasattr(a, "op") else a for a in assignments]):
        return [read_variable(v) for v in variables]


# --- alltoall -----------------------------------------------------------------------

def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends splits[r] rows (an even split when None) to rank r. Returns the received
    rows, and with `splits` given also the received splits (int32), as Horovod does."""
    process_set = _known(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = _graph_named("Alltoall", name, tensor)
    splits_tensor = None if splits is None else tf.cast(tf.convert_to_tensor(splits),
                                                        tf.int64)

    @tf.custom_gradient
    def forward(x):
        def exchange(array, *split_arrays):
            out, received = collectives.alltoall(array, split_arrays[0] if split_arrays
                                                 else None, name, process_set)
            return [out, received.astype(np.int32)]
        inputs = [x] if splits_tensor is None else [x, splits_tensor]
        y, received = _bridge.run(exchange, inputs, [x.dtype, tf.int32])
        y = _bridge.with_shape(y, _bridge.rows_shape(x.shape))
        received = _bridge.with_shape(received, [_process_set(process_set).size()])

        def grad(dy, _received_grad=None):
            back, _ = alltoall(dy, splits=received, name=_grad_name(name),
                               process_set=process_set)
            return back
        return (y, received), grad
    y, received = forward(tf.convert_to_tensor(tensor))
    return (y, received) if splits is not None else y


# --- reducescatter ------------------------------------------------------------------

def reducescatter(tensor, device_dense='', compression=Compression.none, op=Average,
                  name=None, process_set=global_process_set, ignore_name_scope=False,
                  prescale_factor=1.0, postscale_factor=1.0):
    """Reduces over the ranks (Sum or Average) and returns this rank's block of rows."""
    process_set = _known(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = _graph_named("Reducescatter", name, tensor)
    compressed, ctx = compression.compress(tensor)

    @tf.custom_gradient
    def forward(x):
        def scatter(array):
            return [collectives.reducescatter(array, op, name, process_set, prescale_factor,
                                              postscale_factor)]
        y, = _bridge.run(scatter, [x], [x.dtype])

        def grad(dy):
            # Horovod's scaling of the gradient, then the blocks of every rank.
            dy = _reducescatter_grad_scale(dy, op, prescale_factor, postscale_factor,
                                           process_set)
            return allgather(dy, name=_grad_name(name), process_set=process_set)
        return _bridge.with_shape(y, _bridge.rows_shape(x.shape)), grad
    return compression.decompress(forward(compressed), ctx)


def grouped_reducescatter(tensors, device_dense='', compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0, name=None, ignore_name_scope=False):
    """Reducescatters a list of tensors as one unit (one call into libhvd per dtype);
    returns this rank's block of rows of each reduction (Sum or Average)."""
    process_set = _known(process_set)
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return tensors
    compressed, contexts = zip(*[compression.compress(t) for t in tensors])
    name = _graph_named("GroupedReducescatter", name, compressed[0])

    @tf.custom_gradient
    def forward(*xs):
        def scatter(*arrays):
            return _grouped_by_dtype(arrays, name, lambda members, group_name, _:
                                     collectives.grouped_reducescatter_async(
                                         members, op, group_name, process_set,
                                         prescale_factor, postscale_factor))
        ys = _bridge.run(scatter, xs, [x.dtype for x in xs])
        ys = [_bridge.with_shape(y, _bridge.rows_shape(x.shape)) for x, y in zip(xs, ys)]

        def grad(*dys):
            dys = [_reducescatter_grad_scale(dy, op, prescale_factor, postscale_factor,
                                             process_set) for dy in dys]
            return grouped_allgather(dys, name=_grad_name(name), process_set=process_set)
        return ys, grad
    reduced = forward(*compressed)
    return [compression.decompress(t, ctx) for t, ctx in zip(reduced, contexts)]


def _reducescatter_grad_scale(dy, op, prescale_factor, postscale_factor, process_set):
    """Horovod's scaling of a reducescatter's gradient before the allgather."""
    if op == Sum:
        dy = dy * tf.cast(_process_set(process_set).size(), dy.dtype)
    if prescale_factor != 1.0:
        dy = dy * tf.cast(prescale_factor, dy.dtype)
    if postscale_factor != 1.0:
        dy = dy * tf.cast(postscale_factor, dy.dtype)
    return dy


# --- join ---------------------------------------------------------------------------

def join():
    """Tells the other ranks this one has no more data: it takes part, with zeros, in
    their allreduces until every rank has joined. Returns the last rank to join (an
    int32 scalar)."""
    def run_join():
        return [np.array(basics.join(), dtype=np.int32)]
    out, = _bridge.run(run_join, [], [tf.int32])
    return _bridge.with_shape(out, [])
