"""hvd.keras (Horovod's Keras API on Keras 3) on the backend KERAS_BACKEND names
(tensorflow or torch): DistributedOptimizer's reduction and its options, model.fit
with the callbacks (every rank ends with the same bytes, and the result is the
single-process training on the union of the ranks' batches), load_model, the
module-level collectives, horovod.keras and horovod.tensorflow.keras. Run on 2 and 3
ranks."""
import numpy as np
import pytest

keras = pytest.importorskip("keras")

import hvd.keras as hvd_keras  # noqa: E402
from hvd.keras import _backend  # noqa: E402

BACKEND = keras.backend.backend()


@pytest.fixture(scope="module", autouse=True)
def keras_world(world):
    yield hvd_keras


def ranks():
    return hvd_keras.rank(), hvd_keras.size()


def numpy_of(value):
    return keras.ops.convert_to_numpy(getattr(value, "value", value))


def same_bytes_on_every_rank(arrays):
    """True on every rank when every rank holds the same bytes."""
    mine = b"".join(np.ascontiguousarray(numpy_of(a)).tobytes() for a in arrays)
    return all(other == mine for other in hvd_keras.allgather_object(mine))


def sgd_variable(value, shape=(3,)):
    return keras.Variable(np.full(shape, value, np.float32))


def test_module_collectives_on_backend_tensors():
    r, n = ranks()
    total = n * (n + 1) / 2
    reduced = hvd_keras.allreduce(np.full(3, r + 1.0, np.float32))
    np.testing.assert_array_equal(numpy_of(reduced), np.full(3, total / n, np.float32))
    assert keras.ops.is_tensor(reduced)
    summed = hvd_keras.allreduce(np.full(2, r + 1.0, np.float32), op=hvd_keras.Sum)
    np.testing.assert_array_equal(numpy_of(summed), np.full(2, total, np.float32))
    gathered = hvd_keras.allgather(np.full((r + 1, 2), r, np.int32))
    assert numpy_of(gathered).shape == (total, 2)
    root = hvd_keras.broadcast(np.full(4, r, np.float64), root_rank=n - 1)
    np.testing.assert_array_equal(numpy_of(root), np.full(4, n - 1, np.float64))
    scattered = hvd_keras.reducescatter(np.ones((2 * n, 3), np.float32), op=hvd_keras.Sum)
    np.testing.assert_array_equal(numpy_of(scattered), np.full((2, 3), n, np.float32))
    fp16 = hvd_keras.allreduce(np.full(2, r + 1.0, np.float32), op=hvd_keras.Sum,
                               compression=hvd_keras.Compression.fp16)
    assert keras.backend.standardize_dtype(fp16.dtype) == "float32"
    np.testing.assert_array_equal(numpy_of(fp16), np.full(2, total, np.float32))


def apply_once(optimizer, grads_by_rank, variables):
    """Applies this rank's gradients, the same call on every rank."""
    r, _ = ranks()
    optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads_by_rank(r)], variables)


@pytest.mark.parametrize("op", ["average", "sum"])
def test_gradients_are_reduced_before_apply(op):
    r, n = ranks()
    reduce_op = hvd_keras.Average if op == "average" else hvd_keras.Sum
    optimizer = hvd_keras.DistributedOptimizer(keras.optimizers.SGD(1.0), op=reduce_op)
    a, b = sgd_variable(0.0), sgd_variable(0.0, (2, 2))
    apply_once(optimizer, lambda k: [np.full(3, k + 1.0, np.float32),
                                     np.full((2, 2), 2.0 * k, np.float32)], [a, b])
    total_a = n * (n + 1) / 2
    total_b = 2.0 * n * (n - 1) / 2
    scale = 1.0 / n if op == "average" else 1.0
    np.testing.assert_allclose(numpy_of(a), np.full(3, -total_a * scale), rtol=1e-6)
    np.testing.assert_allclose(numpy_of(b), np.full((2, 2), -total_b * scale), rtol=1e-6)
    assert int(numpy_of(optimizer.iterations)) == 1


@pytest.mark.parametrize("option", ["predivide", "fp16", "groups_int", "groups_list",
                                    "num_groups", "process_set"])
def test_reduction_options_keep_the_average(option):
    r, n = ranks()
    a, b, c = sgd_variable(0.0), sgd_variable(0.0), sgd_variable(0.0)
    kwargs = {"predivide": {"gradient_predivide_factor": 2.0},
              "fp16": {"compression": hvd_keras.Compression.fp16},
              "groups_int": {"groups": 2},
              "groups_list": {"groups": [[a, c]]},
              "num_groups": {"num_groups": 3},
              "process_set": {"process_set": hvd_keras.global_process_set}}[option]
    optimizer = hvd_keras.DistributedOptimizer(keras.optimizers.SGD(1.0), **kwargs)
    apply_once(optimizer, lambda k: [np.full(3, k + 1.0, np.float32)] * 3, [a, b, c])
    mean = (n + 1) / 2
    for v in (a, b, c):
        np.testing.assert_allclose(numpy_of(v), np.full(3, -mean), rtol=1e-6)


@pytest.mark.parametrize("average_aggregated", [False, True])
def test_backward_passes_aggregate_locally(average_aggregated):
    r, n = ranks()
    optimizer = hvd_keras.DistributedOptimizer(
        keras.optimizers.SGD(1.0), backward_passes_per_step=2,
        average_aggregated_gradients=average_aggregated)
    v = sgd_variable(0.0)
    apply_once(optimizer, lambda k: [np.full(3, k + 1.0, np.float32)], [v])
    # the first pass only accumulates, and counts an iteration (as Horovod does)
    np.testing.assert_array_equal(numpy_of(v), np.zeros(3, np.float32))
    assert int(numpy_of(optimizer.iterations)) == 1
    apply_once(optimizer, lambda k: [np.full(3, 10.0 * (k + 1), np.float32)], [v])
    per_rank_sum = 11.0 * (n + 1) / 2  # the average over ranks of (k+1) + 10(k+1)
    expected = per_rank_sum / 2 if average_aggregated else per_rank_sum
    np.testing.assert_allclose(numpy_of(v), np.full(3, -expected), rtol=1e-6)
    assert int(numpy_of(optimizer.iterations)) == 2
    # the sums start again from zero
    apply_once(optimizer, lambda k: [np.full(3, 1.0, np.float32)], [v])
    apply_once(optimizer, lambda k: [np.full(3, 1.0, np.float32)], [v])
    np.testing.assert_allclose(numpy_of(v), np.full(3, -expected - (1.0 if
                                                    average_aggregated else 2.0)),
                               rtol=1e-6)
    # the sums are not the optimizer's own variables: nothing to save or broadcast
    plain = keras.optimizers.SGD(1.0)
    plain.build([v])
    assert len(optimizer.variables) == len(plain.variables)


def test_local_variables_are_not_reduced_but_scaled():
    r, n = ranks()
    shared_layer = keras.layers.Dense(1, use_bias=False)
    local_layer = keras.layers.Dense(1, use_bias=False)
    shared_layer.build((None, 3))
    local_layer.build((None, 3))
    for layer in (shared_layer, local_layer):
        layer.kernel.assign(np.zeros((3, 1), np.float32))
    optimizer = hvd_keras.PartialDistributedOptimizer(keras.optimizers.SGD(1.0),
                                                      local_layers=[local_layer])
    grads = lambda k: [np.full((3, 1), k + 1.0, np.float32)] * 2  # noqa: E731
    apply_once(optimizer, grads, [shared_layer.kernel, local_layer.kernel])
    np.testing.assert_allclose(numpy_of(shared_layer.kernel), np.full((3, 1), -(n + 1) / 2),
                               rtol=1e-6)
    np.testing.assert_allclose(numpy_of(local_layer.kernel), np.full((3, 1), -(r + 1) / n),
                               rtol=1e-6)


def make_model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="tanh"),
                             keras.layers.Dense(1)])


def shard(rank, count=32):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(count, 4)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]


def test_fit_trains_identically_on_every_rank_as_one_process_would():
    r, n = ranks()
    batch, steps = 8, 4
    model = make_model(seed=r)  # different initial weights: the callback aligns them
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.05)),
                  loss="mse")
    x, y = shard(r, batch * steps)
    seen = {}

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen[epoch] = dict(logs)
    model.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0,
              callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0),
                         hvd_keras.callbacks.MetricAverageCallback(), Record()])
    assert same_bytes_on_every_rank(model.variables + model.optimizer.variables)
    # the averaged loss is the same on every rank
    assert same_bytes_on_every_rank([np.float64(seen[1]["loss"])])

    # one process: rank 0's initial weights, each step on the union of the ranks'
    # batches (the mean of equal-sized batches' mean gradients is the union's)
    reference = make_model(seed=0)
    reference.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    shards = [shard(k, batch * steps) for k in range(n)]
    for _ in range(2):
        for s in range(steps):
            rows = slice(s * batch, (s + 1) * batch)
            reference.train_on_batch(np.concatenate([xs[rows] for xs, _ in shards]),
                                     np.concatenate([ys[rows] for _, ys in shards]))
    for mine, single in zip(model.trainable_variables, reference.trainable_variables):
        np.testing.assert_allclose(numpy_of(mine), numpy_of(single), rtol=2e-5, atol=2e-6)


def test_fit_with_adam_backward_passes_and_callbacks_stays_identical():
    r, n = ranks()
    model = make_model(seed=10 + r)
    optimizer = hvd_keras.DistributedOptimizer(keras.optimizers.Adam(0.01),
                                               backward_passes_per_step=2,
                                               average_aggregated_gradients=True)
    model.compile(optimizer=optimizer, loss="mse")
    x, y = shard(r, 48)
    lrs = []

    class Rates(keras.callbacks.Callback):
        def on_batch_begin(self, batch, logs=None):
            lrs.append(float(numpy_of(self.model.optimizer.learning_rate)))
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0,
              callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0),
                         hvd_keras.callbacks.LearningRateWarmupCallback(0.01, warmup_epochs=1),
                         Rates()])
    assert same_bytes_on_every_rank(model.trainable_variables + optimizer.variables)
    assert int(numpy_of(optimizer.iterations)) == 12
    # the warm-up ramps from 0.01/size to 0.01 over the first epoch, then holds
    assert lrs[0] == pytest.approx(0.01 / n * ((1 / 6) * (n - 1) + 1))
    assert lrs[5] == pytest.approx(0.01) and lrs[-1] == pytest.approx(0.01)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="tf.IndexedSlices are TensorFlow's")
@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_embedding_gradients_sparse_or_dense(sparse_as_dense):
    r, n = ranks()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,), dtype="int32"), keras.layers.Embedding(10, 3),
                              keras.layers.Flatten(), keras.layers.Dense(1)])
    model.compile(optimizer=hvd_keras.DistributedOptimizer(
        keras.optimizers.SGD(0.1), sparse_as_dense=sparse_as_dense), loss="mse")
    x = np.array([[r, r + 1], [2 * r, 7]], np.int32)
    model.fit(x, np.ones((2, 1), np.float32), batch_size=2, epochs=2, verbose=0)
    assert same_bytes_on_every_rank(model.trainable_variables)


def test_learning_rate_schedule_metric_average_and_best_checkpoint(tmp_path):
    r, n = ranks()
    model = make_model(seed=3)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.1)),
                  loss="mse")
    x, y = shard(r, 16)
    checkpoint = hvd_keras.callbacks.BestModelCheckpoint(monitor="loss")
    assert checkpoint.filepath is None  # Keras 3 insists on one: set before fit
    checkpoint.filepath = str(tmp_path / f"best-{r}.keras")
    history = model.fit(
        x, y, batch_size=8, epochs=3, shuffle=False, verbose=0,
        callbacks=[hvd_keras.callbacks.MetricAverageCallback(),
                   hvd_keras.callbacks.LearningRateScheduleCallback(
                       0.1, multiplier=0.5, start_epoch=1), checkpoint])
    assert (tmp_path / f"best-{r}.keras").exists()
    # epoch 0 is before start_epoch; then 0.1 * 0.5 ** (epoch - 1)
    assert history.history["lr"] == pytest.approx([0.1, 0.1, 0.05])
    assert same_bytes_on_every_rank([np.float64(v) for v in history.history["loss"]])


def test_broadcast_global_variables_names_the_model():
    r, n = ranks()
    model = make_model(seed=20 + r)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.Adam()),
                  loss="mse")
    hvd_keras.broadcast_global_variables(n - 1, model)
    assert same_bytes_on_every_rank(model.variables + model.optimizer.variables)
    with pytest.raises(ValueError, match="pass the model"):
        hvd_keras.broadcast_global_variables(0)


def test_load_model_wraps_the_saved_optimizer(tmp_path):
    r, n = ranks()
    model = make_model(seed=4)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.Adam(0.01)),
                  loss="mse")
    x, y = shard(r, 16)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = str(tmp_path / f"model-{r}.keras")
    model.save(path)
    # the saved optimizer is Keras's own: it loads without libhvd too
    plain = keras.models.load_model(path)
    assert not isinstance(plain.optimizer, hvd_keras.optimizer._DistributedOptimizer)
    loaded = hvd_keras.load_model(path)
    assert isinstance(loaded.optimizer, hvd_keras.optimizer._DistributedOptimizer)
    assert type(loaded.optimizer).__name__ == "Adam"
    assert int(numpy_of(loaded.optimizer.iterations)) == 2
    for saved, restored in zip(model.optimizer.variables, loaded.optimizer.variables):
        np.testing.assert_array_equal(numpy_of(saved), numpy_of(restored))
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert same_bytes_on_every_rank(loaded.trainable_variables)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="hvd.Average and hvd.Sum"):
        hvd_keras.DistributedOptimizer(keras.optimizers.SGD(), op=hvd_keras.Max)
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        hvd_keras.DistributedOptimizer(keras.optimizers.SGD(), backward_passes_per_step=0)
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd_keras.DistributedOptimizer(keras.optimizers.SGD(), op=hvd_keras.Sum,
                                       gradient_predivide_factor=2.0)
    with pytest.raises(TypeError, match="Keras 3 optimizer"):
        hvd_keras.DistributedOptimizer(object())
    wrapped = hvd_keras.DistributedOptimizer(keras.optimizers.SGD())
    with pytest.raises(ValueError, match="wrapped already"):
        hvd_keras.DistributedOptimizer(wrapped)


def test_jax_backend_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    with pytest.raises(NotImplementedError, match="tensorflow, torch, not 'jax'") as error:
        hvd_keras.DistributedOptimizer(keras.optimizers.SGD())
    assert "keras.distribution" in str(error.value)


def test_horovod_keras_modules_are_hvd_keras():
    import horovod.keras as hk
    import horovod.keras.callbacks as hk_callbacks
    assert hk.DistributedOptimizer is hvd_keras.DistributedOptimizer
    assert hk.load_model is hvd_keras.load_model and hk.rank() == hvd_keras.rank()
    assert hk_callbacks.MetricAverageCallback is hvd_keras.callbacks.MetricAverageCallback
    import horovod.keras.elastic as hk_elastic
    assert hk_elastic.KerasState is hvd_keras.elastic.KerasState
    # Horovod's Keras examples pass compile() a TF <= 2.15 argument Keras 3 refuses.
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", experimental_run_tf_function=False)
    assert model.compiled
    if BACKEND == "tensorflow":
        import horovod.tensorflow.keras as htk
        assert htk.DistributedOptimizer is hvd_keras.DistributedOptimizer
        assert htk.callbacks.BroadcastGlobalVariablesCallback is \
            hvd_keras.callbacks.BroadcastGlobalVariablesCallback


@pytest.mark.skipif(BACKEND != "tensorflow", reason="records on a tf.GradientTape")
def test_compute_gradients_reduces_once():
    import tensorflow as tf
    r, n = ranks()
    optimizer = hvd_keras.DistributedOptimizer(keras.optimizers.SGD(1.0))
    v = sgd_variable(0.0)
    pairs = optimizer.compute_gradients(lambda: keras.ops.sum(v * (r + 1.0)), [v])
    np.testing.assert_allclose(numpy_of(pairs[0][0]), np.full(3, (n + 1) / 2), rtol=1e-6)
    # applying what compute_gradients reduced does not reduce it again
    optimizer.apply_gradients(pairs)
    np.testing.assert_allclose(numpy_of(v), np.full(3, -(n + 1) / 2), rtol=1e-6)
    with tf.GradientTape() as tape:
        loss = keras.ops.sum(v * (r + 1.0))
    pairs = optimizer._compute_gradients(loss, [v], tape=tape)
    optimizer.apply_gradients(pairs)
    np.testing.assert_allclose(numpy_of(v), np.full(3, -(n + 1.0)), rtol=1e-6)
    # plain tf.Variables too, as Horovod's tests pass them
    w = tf.Variable(np.zeros(2, np.float32))
    pairs = optimizer.compute_gradients(lambda: tf.reduce_sum(w * (r + 1.0)), [w])
    np.testing.assert_allclose(pairs[0][0].numpy(), np.full(2, (n + 1) / 2), rtol=1e-6)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="XLA compiles TensorFlow's steps")
def test_xla_compiled_step_is_refused_with_what_to_do():
    model = make_model(seed=6)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.1)),
                  loss="mse", jit_compile=True)
    x, y = shard(0, 8)
    with pytest.raises(RuntimeError, match="jit_compile=False"):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
