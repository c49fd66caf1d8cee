"""hvd.tensorflow beyond the collectives' values: the tf.errors types of failures (eager,
tf.function and TF1 graphs), the rank and size ops, grouped allgather and reducescatter
with their gradients, broadcast_ in place, join, process sets,
PartialDistributedGradientTape, DistributedOptimizer over a tf.compat.v1 optimizer,
SyncBatchNormalization and the TF1-only helpers. Run on 2 and 3 ranks."""
import numpy as np
import pytest
import tensorflow as tf

import hvd
import hvd.tensorflow as hvd_tf

MODES = ["eager", "function", "graph"]


@pytest.fixture(scope="module", autouse=True)
def tf_world(world):
    yield hvd_tf


def run(mode, fn, *args):
    """fn(*args) eagerly, traced into a tf.function, or built into a TF1 graph and run
    in a session; returns numpy values."""
    if mode == "eager":
        return tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
    if mode == "function":
        return tf.nest.map_structure(lambda t: t.numpy(), tf.function(fn)(*args))
    with tf.Graph().as_default():
        outputs = fn(*[tf.constant(a) for a in args])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return session.run(outputs)


def ranks():
    return hvd_tf.rank(), hvd_tf.size()


# --- errors -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_ranks_that_disagree_get_failed_precondition(mode):
    r, _ = ranks()
    with pytest.raises(tf.errors.FailedPreconditionError) as info:
        run(mode, lambda: hvd_tf.allreduce(tf.zeros([r + 2])))
    assert "shape" in str(info.value)
    if mode == "eager":
        # Both types: a handler written for libhvd's errors catches it too.
        assert isinstance(info.value, hvd.MismatchError)
        assert isinstance(info.value, hvd_tf.HorovodInternalError)
    with pytest.raises(tf.errors.FailedPreconditionError):
        run(mode, lambda: hvd_tf.broadcast(tf.ones([3]), root_rank=r))
    with pytest.raises(tf.errors.FailedPreconditionError):
        run(mode, lambda: hvd_tf.allgather(tf.ones([2], tf.int32 if r % 2 else tf.float32)))
    # The job goes on: the next collective pairs up.
    np.testing.assert_array_equal(run(mode, lambda: hvd_tf.allreduce(tf.ones([2]),
                                                                     op=hvd_tf.Sum)),
                                  [hvd_tf.size()] * 2)


@pytest.mark.parametrize("mode", MODES)
def test_bad_arguments_get_invalid_argument(mode):
    _, n = ranks()
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(mode, lambda: hvd_tf.alltoall(tf.ones([n + 1])))
    assert "alltoall" in str(info.value)


def test_error_types_follow_horovods():
    from hvd.tensorflow._errors import as_tf_error
    cases = [(hvd.MismatchError(3, "x"), tf.errors.FailedPreconditionError),
             (hvd.InvalidArgumentError(2, "x"), tf.errors.InvalidArgumentError),
             (hvd.UnsupportedError(7, "x"), tf.errors.UnimplementedError),
             (hvd.ShutDownError(5, "x"), tf.errors.UnknownError),
             (hvd.TimeoutError(6, "x"), tf.errors.UnknownError),
             (TypeError("x"), tf.errors.InvalidArgumentError)]
    for error, tf_type in cases:
        converted = as_tf_error(error)
        assert isinstance(converted, tf_type) and isinstance(converted, type(error))
        assert converted.message == str(error) and converted.error_code == tf_type(
            None, None, "").error_code


# --- rank and size ops --------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_rank_and_size_ops(mode):
    values = run(mode, lambda: [hvd_tf.rank_op(), hvd_tf.local_rank_op(), hvd_tf.size_op(),
                                hvd_tf.local_size_op(), hvd_tf.process_set_included_op(),
                                hvd_tf.process_set_included_op(process_set_id=12345)])
    assert list(values) == [hvd_tf.rank(), hvd_tf.local_rank(), hvd_tf.size(),
                            hvd_tf.local_size(), 1, -3]


# --- grouped allgather and reducescatter --------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_grouped_allgather_and_its_gradient(mode):
    r, n = ranks()

    def fn():
        x = tf.ones([r + 1, 2]) * float(r)
        ids = tf.fill([2], r)
        with tf.GradientTape() as tape:
            tape.watch(x)
            gathered, gathered_ids = hvd_tf.grouped_allgather([x, ids])
            loss = tf.reduce_sum(gathered * 3.0)
        return gathered, gathered_ids, tape.gradient(loss, x)
    gathered, gathered_ids, grad = run(mode, fn)
    np.testing.assert_array_equal(gathered, np.concatenate(
        [np.full([q + 1, 2], q, np.float32) for q in range(n)]))
    np.testing.assert_array_equal(gathered_ids, np.repeat(np.arange(n), 2))
    np.testing.assert_array_equal(grad, np.full([r + 1, 2], 3.0))


@pytest.mark.parametrize("mode", MODES)
def test_grouped_reducescatter_and_its_gradient(mode):
    r, n = ranks()

    def fn():
        a = tf.reshape(tf.range(2 * n, dtype=tf.float32), [2 * n, 1]) + float(r)
        b = tf.ones([n], tf.float64)
        with tf.GradientTape() as tape:
            tape.watch(a)
            block_a, block_b = hvd_tf.grouped_reducescatter([a, b], op=hvd_tf.Sum)
            loss = tf.reduce_sum(block_a)
        return block_a, block_b, tape.gradient(loss, a)
    block_a, block_b, grad = run(mode, fn)
    total = np.arange(2 * n, dtype=np.float32).reshape(2 * n, 1) * n + sum(range(n))
    np.testing.assert_array_equal(block_a, total[2 * r:2 * r + 2])
    np.testing.assert_array_equal(block_b, [n])
    # Horovod's gradient of a Sum: every rank's blocks of ones, times the size.
    np.testing.assert_array_equal(grad, np.full([2 * n, 1], n, np.float32))


# --- broadcast_, join, process sets -------------------------------------------------

@pytest.mark.parametrize("mode", ["eager", "function"])
def test_broadcast_in_place(mode):
    r, n = ranks()
    root = n - 1
    v = tf.Variable(tf.fill([2, 3], float(r)))
    w = tf.Variable(tf.fill([4], r))

    def fn():
        return hvd_tf.broadcast_([v, w], root_rank=root)
    values = run(mode, fn)
    np.testing.assert_array_equal(v.numpy(), np.full([2, 3], root))
    np.testing.assert_array_equal(w.numpy(), np.full([4], root))
    np.testing.assert_array_equal(values[0], v.numpy())


def test_broadcast_in_place_of_tf1_reference_variables():
    from tensorflow.python.ops.ref_variable import RefVariable
    r, _ = ranks()
    with tf.Graph().as_default():
        var = RefVariable(tf.fill([3], float(r)))
        value, = hvd_tf.broadcast_([var], root_rank=0)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            np.testing.assert_array_equal(session.run(value), [0.0] * 3)
            np.testing.assert_array_equal(session.run(var), [0.0] * 3)


def test_join_returns_the_last_rank_to_join():
    r, n = ranks()
    if r == 0:
        # the others' allreduce runs with rank 0 joined (zeros from it)
        last = hvd_tf.join()
    else:
        total = hvd_tf.allreduce(tf.fill([2], float(r)), op=hvd_tf.Sum, name="join.sum")
        np.testing.assert_array_equal(total.numpy(), [sum(range(n))] * 2)
        last = hvd_tf.join()
    assert last.dtype == tf.int32 and 0 <= int(last) < n


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_process_sets_from_tensorflow(mode):
    r, n = ranks()
    evens = hvd_tf.add_process_set([q for q in range(n) if q % 2 == 0])
    try:
        if r % 2 == 0:
            total = run(mode, lambda: hvd_tf.allreduce(tf.ones([2]), op=hvd_tf.Sum,
                                                       process_set=evens))
            np.testing.assert_array_equal(total, [len(evens.ranks)] * 2)
        included = run(mode, lambda: hvd_tf.process_set_included_op(
            process_set_id=evens.process_set_id))
        size = run(mode, lambda: hvd_tf.size_op(process_set_id=evens.process_set_id))
        assert included == (1 if r % 2 == 0 else 0) and size == len(evens.ranks)
    finally:
        hvd_tf.remove_process_set(evens)


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_process_set_is_refused_while_the_op_is_built(mode):
    """ValueError when the operation is made, as Horovod's, also in a TF1 graph where
    the collective itself would only run (and fail) in session.run()."""
    unknown = hvd_tf.ProcessSet([0])
    unknown.process_set_id = 4321
    unregistered = hvd_tf.ProcessSet([0])
    for process_set in (unknown, unregistered):
        for build in (lambda: hvd_tf.allreduce(tf.ones([2]), process_set=process_set),
                      lambda: hvd_tf.allgather(tf.ones([2]), process_set=process_set),
                      lambda: hvd_tf.broadcast(tf.ones([2]), 0, process_set=process_set)):
            with pytest.raises(ValueError):
                run(mode, build)


def test_a_rank_outside_the_tapes_process_set_keeps_its_own_gradient():
    """Horovod's rule: gradients are reduced only by the set's members (and only when
    the set has more than one); any other rank trains on its own gradient."""
    r, n = ranks()
    last = hvd_tf.add_process_set([n - 1])
    evens = hvd_tf.add_process_set([q for q in range(n) if q % 2 == 0])
    try:
        x = tf.constant(float(r))
        for process_set in (last, evens):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = x * x
            grad, = hvd_tf.DistributedGradientTape(tape, process_set=process_set).gradient(
                y, [x])
            members = process_set.ranks
            expected = (2.0 * sum(members) / len(members)
                        if r in members and len(members) > 1 else 2.0 * r)
            assert grad.numpy() == pytest.approx(expected)
    finally:
        hvd_tf.remove_process_set(evens)
        hvd_tf.remove_process_set(last)


# --- gradient tapes and optimizers --------------------------------------------------

def test_partial_distributed_gradient_tape_keeps_local_layers_local():
    r, n = ranks()
    local = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.Constant(r + 1))
    shared = tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.Constant(1.0))
    x = tf.ones([1, 3])
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(shared(local(x)))
    variables = local.trainable_weights + shared.trainable_weights
    plain = tape.gradient(loss, variables)
    tape = hvd_tf.PartialDistributedGradientTape(tape, local_layers=local)
    grads = tape.gradient(loss, variables)
    for g, p in zip(grads[:2], plain[:2]):
        np.testing.assert_allclose(g.numpy(), p.numpy() / n)
    gathered = hvd_tf.allgather(tf.reshape(grads[2], [1, -1])).numpy()
    assert (gathered == gathered[0]).all()
    local_pairs, reduced_pairs = tape.get_local_and_global_gradients(loss, variables)
    assert [v.name for v, _ in local_pairs] == [v.name for v in local.trainable_weights]
    assert len(reduced_pairs) == len(shared.trainable_weights)
    with pytest.raises(ValueError):
        hvd_tf.PartialDistributedGradientTape(tf.GradientTape(), local_layers=[object()])


def test_distributed_optimizer_over_a_tf1_optimizer():
    r, n = ranks()
    with tf.Graph().as_default():
        w = tf.compat.v1.get_variable("w", initializer=tf.zeros([2]))
        loss = tf.reduce_sum(w * float(r + 1))
        opt = hvd_tf.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(1.0))
        pairs = opt.compute_gradients(loss, var_list=[w])
        step = opt.apply_gradients(pairs)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(step)
            value = session.run(w)
    np.testing.assert_allclose(value, [-(n + 1) / 2.0] * 2)


def test_distributed_optimizer_refuses_what_it_cannot_do():
    legacy = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    with pytest.raises(NotImplementedError, match="DistributedGradientTape"):
        hvd_tf.DistributedOptimizer(legacy, op=hvd_tf.Adasum)
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd_tf.DistributedOptimizer(legacy, op=hvd_tf.Sum, gradient_predivide_factor=2.0)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_sync_batch_normalization_uses_the_global_batch(mode):
    r, n = ranks()
    every = np.arange(n * 4 * 2, dtype=np.float32).reshape(n * 4, 2) ** 1.5
    mine = every[r * 4:(r + 1) * 4]
    sync_bn = hvd_tf.SyncBatchNormalization(axis=1, momentum=0.5)
    out = run(mode, lambda x: sync_bn(x, training=True), tf.constant(mine))
    mean, var = every.mean(0), every.var(0)
    np.testing.assert_allclose(out, (mine - mean) / np.sqrt(var + sync_bn.epsilon),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sync_bn.moving_mean.numpy(), 0.5 * mean, rtol=1e-5)
    with pytest.raises(ValueError, match="fused"):
        hvd_tf.SyncBatchNormalization(fused=True)


# --- TF1-only helpers ---------------------------------------------------------------

def test_tf1_helpers():
    r, _ = ranks()
    with pytest.raises(RuntimeError, match="broadcast_variables"):
        hvd_tf.broadcast_global_variables(0)
    with pytest.raises(NotImplementedError, match="broadcast_variables"):
        hvd_tf.BroadcastGlobalVariablesHook(0)
    with tf.Graph().as_default():
        v = tf.compat.v1.get_variable("v", initializer=tf.fill([2], float(r)))
        bcast = hvd_tf.broadcast_global_variables(0)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(bcast)
            np.testing.assert_array_equal(session.run(v), [0.0, 0.0])
    assert hvd_tf.broadcast_object_fn(root_rank=0)({"r": r}) == {"r": 0}


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_broadcast_variables_of_keras_3_layers_and_optimizers(mode):
    import horovod.tensorflow  # noqa: F401 - makes opt.variables() callable
    r, _ = ranks()
    layer = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.Constant(r))
    layer.build((None, 3))
    opt = tf.keras.optimizers.SGD(0.1, momentum=0.9)
    opt.build(layer.trainable_weights)
    opt.iterations.assign(r)
    # Horovod's TF2 examples call opt.variables(), a method up to TensorFlow 2.10.
    assert opt.variables() == opt.variables and len(opt.variables()) >= 1

    def fn():
        hvd_tf.broadcast_variables(layer.variables, root_rank=0)
        hvd_tf.broadcast_variables(opt.variables(), root_rank=0)
        return tf.constant(0)
    run(mode, fn)
    np.testing.assert_array_equal(layer.kernel.numpy(), np.zeros([3, 2]))
    assert int(opt.iterations.numpy()) == 0


def test_elastic_state_syncs_commits_and_restores():
    r, _ = ranks()
    w = tf.Variable(tf.fill([2], float(r + 1)))
    state = hvd_tf.elastic.TensorFlowState([w], epoch=10 + r)
    state.sync()
    np.testing.assert_array_equal(w.numpy(), [1.0, 1.0])
    assert state.epoch == 10
    w.assign([5.0, 5.0])
    state.epoch = 11
    state.commit()
    w.assign([7.0, 7.0])
    state.epoch = 12
    state.restore()
    np.testing.assert_array_equal(w.numpy(), [5.0, 5.0])
    assert state.epoch == 11

    @hvd_tf.elastic.run
    def train(state):
        return state.epoch
    assert train(state) == 11
    layer = tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.Constant(r))
    model = tf.keras.Sequential([tf.keras.Input((2,)), layer])
    keras_state = hvd_tf.elastic.TensorFlowKerasState(model, optimizer=tf.keras.optimizers.SGD(),
                                                      batch=r)
    keras_state.sync()
    np.testing.assert_array_equal(layer.kernel.numpy(), np.zeros([2, 1]))
    assert keras_state.batch == 0
