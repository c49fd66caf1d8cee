"""DistributedOptimizer for Keras 3: any keras.optimizers.Optimizer whose gradients
are reduced over the ranks before they are applied.

Keras 3 applies gradients through Optimizer.apply on every backend (apply_gradients
calls it; the torch trainer calls it directly), so the wrapper is a subclass of the
user's optimizer class, with the same name and module, whose apply() reduces first.
A model saved with it loads without libhvd as the plain optimizer.
"""
import keras

from ..basics import Average, Sum, global_process_set, predivide_scales, reduces_gradients
from . import _backend
from .compression import Compression


class _Settings:
    """What the wrapper was asked for (one per wrapped class)."""

    def __init__(self, compression, sparse_as_dense, op, gradient_predivide_factor,
                 backward_passes_per_step, average_aggregated_gradients, groups,
                 process_set, scale_local_gradients):
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.prescale, self.postscale = predivide_scales(op, gradient_predivide_factor)
        self.backward_passes_per_step = backward_passes_per_step
        self.average_aggregated_gradients = average_aggregated_gradients
        self.groups = groups
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients


class _LocalAggregation:
    """Gradients summed on this rank over backward_passes_per_step passes, and the
    count of passes so far. A plain object, so that the optimizer does not track (and
    save, and broadcast) these variables as its own."""

    def __init__(self, variables):
        self.passes = keras.Variable(0, dtype="int64", trainable=False,
                                     name="hvd_backward_passes")
        self.sums = [keras.Variable(keras.ops.zeros(tuple(v.shape), dtype=v.dtype),
                                    trainable=False, name="hvd_local_gradient_sum")
                     for v in variables]


class _DistributedOptimizer:
    """Mixed in before the user's optimizer class (see DistributedOptimizer)."""

    _hvd = None  # the _Settings, set on each wrapped class

    def build(self, variables):
        super().build(variables)
        if self._hvd.backward_passes_per_step > 1:
            self._hvd_aggregation = _LocalAggregation(variables)

    def register_local_var(self, var):
        """Keeps `var`'s gradient local: not reduced (divided by the set's size when
        scale_local_gradients, as Horovod does)."""
        if not hasattr(self, "_hvd_local"):
            self._hvd_local = _LocalVariables()
        self._hvd_local.add(var)

    def compute_gradients(self, loss, var_list, tape=None):
        """Horovod's Keras API on TensorFlow: see _compute_gradients."""
        return self._compute_gradients(loss, var_list, None, tape)

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        """(gradient, variable) pairs of `loss` (a tensor that `tape` recorded, or a
        callable), reduced over the ranks as apply() would reduce them (with
        backward_passes_per_step > 1, local: apply() aggregates and reduces them).
        Keras 3 optimizers have no such method; Horovod's Keras wrapper has, for
        custom training loops on TensorFlow."""
        if _backend.name() != "tensorflow":
            raise NotImplementedError("compute_gradients records on a tf.GradientTape: "
                                      "TensorFlow backend only; on torch, call "
                                      "loss.backward() and optimizer.apply(grads, vars)")
        import tensorflow as tf
        tape = tf.GradientTape() if tape is None else tape
        if callable(loss):
            with tape:
                if not callable(var_list):  # the tf.Variables behind Keras's
                    tape.watch([v.value if isinstance(v, keras.Variable) else v
                                for v in var_list])
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list, grad_loss)
        if self._hvd.backward_passes_per_step == 1:
            grads = self._hvd_allreduce(grads, var_list)
            # apply() of exactly these tensors does not reduce them again
            self._hvd_reduced = [g for g in grads if g is not None]
        return list(zip(grads, var_list))

    def _hvd_take_reduced(self, grads):
        """Whether `grads` are the ones _compute_gradients reduced last (forgotten then)."""
        reduced = getattr(self, "_hvd_reduced", None)
        if not reduced:
            return False
        self._hvd_reduced = None
        present = [g for g in grads if g is not None]
        return len(present) == len(reduced) and all(g is r for g, r in zip(present, reduced))

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if not grads:
            return super().apply(grads, trainable_variables)
        _backend.check_not_xla()
        if trainable_variables is None:
            if not self.built:  # Keras's own error says what to do
                return super().apply(grads, trainable_variables)
            variables = list(self._trainable_variables)
        else:
            variables = list(trainable_variables)
            if not self.built:
                with keras.name_scope(self.name, caller=self):
                    self.build(variables)
                self.built = True
        if self._hvd.backward_passes_per_step == 1:
            if not self._hvd_take_reduced(grads):
                grads = self._hvd_allreduce(grads, variables)
            return super().apply(grads, variables)
        return self._hvd_apply_aggregated(grads, variables)

    def _hvd_apply_aggregated(self, grads, variables):
        """Horovod's local aggregation: passes before the last of each group of
        backward_passes_per_step add their gradients to local sums and only count an
        iteration; the last reduces the sums (divided by the count when
        average_aggregated_gradients) and applies them."""
        aggregation = self._hvd_aggregation
        steps = self._hvd.backward_passes_per_step
        sums = [aggregation.sums[self._get_variable_index(v)] for v in variables]
        grads = [None if g is None else _backend.densified(g) for g in grads]
        aggregation.passes.assign_add(1)
        base_apply = super().apply

        def reduce_and_apply():
            totals = [None if g is None else g + s for g, s in zip(grads, sums)]
            if self._hvd.average_aggregated_gradients:
                totals = [None if t is None else t / steps for t in totals]
            base_apply(self._hvd_allreduce(totals, variables), variables)
            for s in sums:
                s.assign(keras.ops.zeros_like(s))
            aggregation.passes.assign(0)

        def accumulate():
            for g, s in zip(grads, sums):
                if g is not None:
                    s.assign_add(keras.ops.cast(g, s.dtype))
            self._iterations.assign_add(1)

        keras.ops.cond(aggregation.passes >= steps, reduce_and_apply, accumulate)

    def _hvd_allreduce(self, grads, variables):
        """The gradients reduced over the process set; local variables' kept (and
        scaled), None left None."""
        settings = self._hvd
        local = getattr(self, "_hvd_local", None)
        grads = list(grads)
        to_reduce = [i for i, (g, v) in enumerate(zip(grads, variables))
                     if g is not None and not (local and local.holds(v))]
        if not reduces_gradients(settings.process_set):
            to_reduce = []
        for group in _groups(to_reduce, variables, settings.groups):
            tensors, contexts = [], []
            for i in group:
                g = grads[i]
                if settings.sparse_as_dense or not _backend.is_sparse(g):
                    g, ctx = settings.compression.compress(_backend.densified(g))
                else:
                    ctx = None  # allgathered as it is
                tensors.append(g)
                contexts.append(ctx)
            reduced = _backend.grouped_allreduce(tensors, settings.op, settings.prescale,
                                                 settings.postscale, settings.process_set)
            for i, g, ctx in zip(group, reduced, contexts):
                grads[i] = g if ctx is None and _backend.is_sparse(g) else \
                    settings.compression.decompress(g, ctx)
        if local and settings.scale_local_gradients:
            size = float(settings.process_set.size())
            for i, v in enumerate(variables):
                if grads[i] is not None and local.holds(v):
                    grads[i] = _scaled(grads[i], 1.0 / size)
        return grads


class _LocalVariables:
    """Variables registered as local (by identity; Keras variables do not hash)."""

    def __init__(self):
        self._vars = []

    def add(self, var):
        if not self.holds(var):
            self._vars.append(var)

    def holds(self, var):
        return any(var is v for v in self._vars)


def _scaled(grad, factor):
    if _backend.is_sparse(grad):
        import tensorflow as tf
        return tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
    return grad * factor


def _groups(indices, variables, groups):
    """The reduction units: all gradients in one (groups None); `groups` units of
    consecutive gradients (an int); or the variables of each inner list together and
    every other gradient on its own (a list of lists of variables), as Horovod
    groups them."""
    if not indices:
        return []
    if groups is None:
        return [indices]
    if isinstance(groups, int):
        count = min(groups, len(indices))
        per, extra = divmod(len(indices), count)
        units, start = [], 0
        for k in range(count):
            end = start + per + (1 if k < extra else 0)
            units.append(indices[start:end])
            start = end
        return units
    units, placed = [], set()
    for group in groups:
        unit = [i for i in indices if any(variables[i] is v for v in group)]
        if unit:
            units.append(unit)
            placed.update(unit)
    return units + [[i] for i in indices if i not in placed]


def _check(op, gradient_predivide_factor, groups, backward_passes_per_step):
    if op not in (Average, Sum):
        raise ValueError(f"DistributedOptimizer: op={op!r}; Keras supports hvd.Average "
                         "and hvd.Sum (as Horovod's Keras layer does)")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("DistributedOptimizer: gradient_predivide_factor needs "
                         "op=hvd.Average")
    if groups is not None and not (isinstance(groups, list) or
                                   (isinstance(groups, int) and groups > 0)):
        raise ValueError("DistributedOptimizer: groups must be a positive integer or a "
                         "list of lists of variables")
    if not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
        raise ValueError("DistributedOptimizer: backward_passes_per_step must be an "
                         f"integer >= 1, not {backward_passes_per_step!r}")


def distributed_class(optimizer_class, settings):
    """optimizer_class with apply() reducing first: same name and module, so that
    Keras saves it as the plain optimizer."""
    return type(optimizer_class.__name__, (_DistributedOptimizer, optimizer_class),
                {"_hvd": settings, "__module__": optimizer_class.__module__,
                 "__qualname__": optimizer_class.__qualname__})


def DistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average,
                         backward_passes_per_step=1, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=global_process_set,
                         scale_local_gradients=True):
    """Wraps a Keras 3 optimizer (an instance) so that gradients are reduced over the
    ranks with `op` before they are applied (Horovod's signature). Returns a new
    optimizer of a subclass of the optimizer's class, made from its config (state is
    not carried over: wrap before training, as with Horovod). Device arguments are
    accepted for Horovod's signature: the reduction runs on host memory."""
    _backend.name()  # JAX and other backends: refused here, with why
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise TypeError("DistributedOptimizer wraps a Keras 3 optimizer "
                        f"(keras.optimizers.Optimizer), not {type(optimizer).__name__}")
    if num_groups and groups is None:
        groups = num_groups  # Horovod's deprecated spelling
    _check(op, gradient_predivide_factor, groups, backward_passes_per_step)
    if isinstance(optimizer, _DistributedOptimizer):
        raise ValueError("DistributedOptimizer: the optimizer is wrapped already")
    settings = _Settings(compression, sparse_as_dense, op, gradient_predivide_factor,
                         backward_passes_per_step, average_aggregated_gradients, groups,
                         process_set, scale_local_gradients)
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    return distributed_class(type(optimizer), settings).from_config(config)


def PartialDistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                                compression=Compression.none, sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=Average, groups=None,
                                process_set=global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer whose `local_layers` (a keras.layers.Layer or a list of
    them) keep their gradients local: not reduced, divided by the set's size when
    scale_local_gradients (Horovod's PartialDistributedOptimizer)."""
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, keras.layers.Layer):
        local_layers = [local_layers]
    elif not all(isinstance(layer, keras.layers.Layer) for layer in local_layers):
        raise ValueError("PartialDistributedOptimizer: every local layer must be a "
                         "keras.layers.Layer")
    wrapped = DistributedOptimizer(optimizer, name, device_dense, device_sparse, compression,
                                   sparse_as_dense, gradient_predivide_factor, op,
                                   groups=groups, process_set=process_set,
                                   scale_local_gradients=scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            wrapped.register_local_var(var)
    return wrapped
