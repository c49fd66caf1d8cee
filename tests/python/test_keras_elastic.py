"""hvd.keras.elastic (horovod.keras.elastic, horovod.tensorflow.keras.elastic) and, on
the TensorFlow backend, hvd.tensorflow.elastic in a job of fixed size: the states'
sync, commit and restore (weights and optimizer slots bit for bit), their bytes for an
elastic job's state files, the Keras callbacks' commits and counts, and run's
restore-and-raise after a collective failed inside a compiled step. Run on 2 and 3
ranks on the backend KERAS_BACKEND names."""
import numpy as np
import pytest

keras = pytest.importorskip("keras")

import hvd.keras as hvd  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")

BACKEND = keras.backend.backend()
STEPS = 5


def compiled_model(seed=3):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3),
                              keras.layers.Dense(2)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)),
                  loss="mse")
    return model


def data(rank, n=2 * STEPS):
    rng = np.random.default_rng(rank)
    return rng.random((n, 4), dtype=np.float32), rng.random((n, 2), dtype=np.float32)


def numpy_bytes(state):
    """The model's and optimizer's variables as bytes, in the state's order."""
    return [np.ascontiguousarray(keras.ops.convert_to_numpy(v.value)).tobytes()
            for v in list(state.model.variables) + list(state.optimizer.variables)]


def same_on_every_rank(value):
    return all(other == value for other in hvd.allgather_object(value))


def test_restore_gives_back_the_committed_weights_and_slots_bit_for_bit():
    model = compiled_model()
    state = hvd.elastic.KerasState(model, epoch=0, batch=0)
    assert state.optimizer is model.optimizer and state.optimizer.built
    x, y = data(hvd.rank())
    state.sync()
    model.fit(x, y, batch_size=2, epochs=1, verbose=0)
    state.batch = STEPS
    state.commit()
    committed = numpy_bytes(state)
    assert int(keras.ops.convert_to_numpy(state.optimizer.iterations)) == STEPS
    model.fit(x, y, batch_size=2, epochs=1, verbose=0)
    state.batch = 99
    assert numpy_bytes(state) != committed
    state.restore()
    assert numpy_bytes(state) == committed and state.batch == STEPS
    assert same_on_every_rank(committed)  # the optimizer reduced every step


def test_sync_takes_rank_zeros_model_optimizer_and_values_and_commits_them():
    rank = hvd.rank()
    model = compiled_model(seed=10 + rank)  # different weights on every rank
    state = hvd.elastic.KerasState(model, epoch=rank + 1)
    model.optimizer.iterations.assign(7 + rank)
    state.sync()
    synced = numpy_bytes(state)
    assert same_on_every_rank(synced) and state.epoch == 1
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 7
    model.variables[0].assign(np.zeros(model.variables[0].shape, np.float32))
    state.epoch = 5
    state.restore()
    assert numpy_bytes(state) == synced and state.epoch == 1


def test_state_bytes_load_into_a_fresh_model_bit_for_bit():
    model = compiled_model()
    state = hvd.elastic.KerasState(model, epoch=2, batch=3)
    model.fit(*data(hvd.rank()), batch_size=2, epochs=1, verbose=0)
    state.commit()
    saved, committed = state.state_bytes(), numpy_bytes(state)
    other = hvd.elastic.KerasState(compiled_model(seed=99), epoch=0, batch=0)
    other.load_state_bytes(saved)
    assert numpy_bytes(other) == committed and (other.epoch, other.batch) == (2, 3)


def test_a_commit_for_another_model_is_refused_with_what_differs():
    state = hvd.elastic.KerasState(compiled_model(), epoch=0)
    wider = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5),
                              keras.layers.Dense(2)])
    wider.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    other = hvd.elastic.KerasState(wider, epoch=0)
    with pytest.raises(ValueError, match=r"variable 0 .* is float32\[4, 3\], the "
                                         r"variable is float32\[4, 5\]"):
        other.load_state_bytes(state.state_bytes())
    unbuilt_optimizer = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    unbuilt_optimizer.compile(optimizer=keras.optimizers.SGD(), loss="mse")
    fewer = hvd.elastic.KerasState(unbuilt_optimizer, epoch=0)
    with pytest.raises(ValueError, match="holds 14 variables but the state's model and "
                                         "optimizer have 4"):
        fewer.load_state_bytes(state.state_bytes())


def test_models_without_variables_or_optimizer_are_refused():
    unbuilt = keras.Sequential([keras.layers.Dense(3)])
    unbuilt.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="not built yet"):
        hvd.elastic.KerasState(unbuilt)
    uncompiled = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="has no optimizer"):
        hvd.elastic.KerasState(uncompiled)


class CountingState(hvd.elastic.KerasState):
    """Records (batch, epoch) at each commit."""

    def commit(self):
        self.commits.append((self.batch, self.epoch))
        super().commit()


def test_callbacks_commit_every_n_batches_and_count_batches_and_epochs():
    model = compiled_model()
    state = CountingState(model, epoch=0, batch=0)
    state.commits = []
    callbacks = [hvd.elastic.UpdateEpochStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.CommitStateCallback(state, batches_per_commit=2)]
    x, y = data(hvd.rank())
    model.fit(x, y, batch_size=2, epochs=2, callbacks=callbacks, verbose=0)
    # Every second batch and every epoch's end (the batch count back to 0), as Horovod
    # counts: the epoch's end does not start the count afresh.
    assert state.commits == [(1, 0), (3, 0), (0, 1), (0, 1), (2, 1), (4, 1), (0, 2)]
    assert (state.epoch, state.batch) == (2, 0)
    # A later fit (after a reset) counts on from the state's epoch; the batch count
    # starts afresh, and the steps left in a resumed epoch are shortened.
    state.commits, state.batch = [], 2
    steps = []

    class Steps(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            steps.append(self.params["steps"])
    model.fit(x, y, batch_size=2, epochs=1, steps_per_epoch=STEPS,
              callbacks=callbacks + [Steps()], verbose=0)
    assert steps == [STEPS - 2]
    assert state.commits == [(1, 2), (3, 2), (0, 3)] and state.epoch == 3


def test_run_syncs_then_restores_and_raises_a_collective_failed_in_a_compiled_step():
    model = compiled_model(seed=20 + hvd.rank())
    state = hvd.elastic.KerasState(model, epoch=0)
    synced = []

    @hvd.elastic.run
    def train(state):
        synced.append(numpy_bytes(state))
        state.epoch = 1
        state.commit()
        model.variables[0].assign(np.ones(model.variables[0].shape, np.float32))
        # Every rank reduces a different shape: a MismatchError on every rank.
        hvd.allreduce(np.ones(hvd.rank() + 1, np.float32), name="elastic.mismatch")

    with pytest.raises(hvd.HorovodInternalError, match="shape"):
        train(state)
    assert same_on_every_rank(synced[0])
    assert numpy_bytes(state) == synced[0] and state.epoch == 1


@pytest.mark.skipif(BACKEND != "tensorflow", reason="tf.function and tf.Variable")
def test_tensorflow_state_and_a_collective_failed_inside_tf_function():
    import tensorflow as tf

    import hvd.tensorflow.elastic as tf_elastic
    from hvd.tensorflow import allreduce
    rank = hvd.rank()
    weights = tf.Variable(np.full(3, rank, np.float32))
    steps = tf.Variable(rank, dtype=tf.int64)
    state = tf_elastic.TensorFlowState([weights, steps], epoch=rank)

    @tf.function
    def mismatched_step():
        weights.assign_add(tf.ones(3))
        return allreduce(tf.ones(rank + 1), name="elastic.tf.mismatch")

    @tf_elastic.run
    def train(state):
        assert weights.numpy().tolist() == [0.0] * 3 and int(steps.numpy()) == 0
        assert state.epoch == 0
        steps.assign(4)
        state.commit()
        mismatched_step()

    with pytest.raises(hvd.HorovodInternalError) as failure:
        train(state)
    assert type(failure.value).__name__ == "MismatchError"
    assert isinstance(failure.value.__cause__, tf.errors.OpError)
    assert weights.numpy().tolist() == [0.0] * 3 and int(steps.numpy()) == 4
    # A Keras 3 model's variables (no read_value()) are tf.Variables enough for it.
    model = compiled_model(seed=30 + rank)
    tf_elastic.TensorFlowState(model.trainable_variables).sync()
    assert same_on_every_rank(b"".join(v.numpy().tobytes() for v in model.trainable_variables))
    with pytest.raises(ValueError, match="no collection of global variables"):
        tf_elastic.TensorFlowState()
    with pytest.raises(ValueError, match="TensorFlow 1"):
        tf_elastic.TensorFlowState([weights], session=object())


def test_horovod_names():
    import horovod.keras as hk
    import horovod.keras.elastic as hk_elastic
    assert hk.elastic is hk_elastic and hk_elastic.KerasState is hvd.elastic.KerasState
    assert hk_elastic.CommitStateCallback is hvd.elastic.CommitStateCallback
    if BACKEND == "tensorflow":
        import horovod.tensorflow as htf
        import horovod.tensorflow.keras.elastic as htk_elastic
        assert htk_elastic.UpdateBatchStateCallback is hvd.elastic.UpdateBatchStateCallback
        assert issubclass(htf.elastic.TensorFlowKerasState, hvd.elastic.KerasState)
        state = htf.elastic.TensorFlowKerasState(compiled_model(), backend=keras.backend,
                                                 epoch=0)
        assert state.backend is keras.backend
