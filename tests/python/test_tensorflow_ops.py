"""hvd.tensorflow (Horovod's TensorFlow 2 API): each collective eagerly and inside
tf.function, Horovod's gradients, DistributedGradientTape, tf.IndexedSlices, errors
on every rank, and 64-byte aligned outputs. Run on 2 and 3 ranks."""
import numpy as np
import pytest
import tensorflow as tf

import hvd.tensorflow as hvd_tf
from hvd import collectives
from hvd._aligned import aligned_bytes, is_aligned
from hvd.tensorflow import _bridge

MODES = ["eager", "function"]


@pytest.fixture(scope="module", autouse=True)
def tf_world(world):
    yield hvd_tf


def run(mode, fn, *args):
    """fn(*args) eagerly, or traced into a tf.function."""
    return fn(*args) if mode == "eager" else tf.function(fn)(*args)


def ranks():
    return hvd_tf.rank(), hvd_tf.size()


def test_basics_are_the_shared_ones():
    import hvd
    assert hvd_tf.rank() == hvd.rank() and hvd_tf.size() == hvd.size()
    assert hvd_tf.is_initialized() and hvd_tf.local_size() >= 1
    assert hvd_tf.init is hvd.init and hvd_tf.Sum == hvd.Sum


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_ops(mode):
    r, n = ranks()
    x = tf.constant([1.0, 2.0, 3.0]) * (r + 1)
    total = sum(range(1, n + 1))
    for op, expected in ((hvd_tf.Sum, total), (hvd_tf.Average, total / n),
                         (hvd_tf.Min, 1), (hvd_tf.Max, n)):
        y = run(mode, lambda t: hvd_tf.allreduce(t, op=op), x)
        np.testing.assert_array_equal(y.numpy(), np.array([1, 2, 3], np.float32) * expected)
        assert y.shape == (3,) and y.dtype == tf.float32


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_fp16_compression_keeps_dtype(mode):
    r, n = ranks()
    x = tf.fill([4, 2], float(r + 1))
    y = run(mode, lambda t: hvd_tf.allreduce(t, op=hvd_tf.Sum,
                                             compression=hvd_tf.Compression.fp16), x)
    assert y.dtype == tf.float32
    np.testing.assert_array_equal(y.numpy(), np.full([4, 2], n * (n + 1) / 2, np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_mixed_dtypes(mode):
    r, n = ranks()
    xs = [tf.constant([r, r], tf.int32), tf.fill([2, 3], float(r)), tf.constant(float(r), tf.float64)]
    ys = run(mode, lambda *ts: hvd_tf.grouped_allreduce(list(ts), op=hvd_tf.Sum), *xs)
    s = sum(range(n))
    np.testing.assert_array_equal(ys[0].numpy(), [s, s])
    np.testing.assert_array_equal(ys[1].numpy(), np.full([2, 3], s, np.float32))
    assert ys[2].numpy() == s and ys[2].dtype == tf.float64 and ys[2].shape == ()


@pytest.mark.parametrize("mode", MODES)
def test_allgather_uneven_rows(mode):
    r, n = ranks()
    x = tf.fill([r + 1, 2], r)
    y = run(mode, hvd_tf.allgather, x)
    expected = np.concatenate([np.full([i + 1, 2], i, np.int32) for i in range(n)])
    np.testing.assert_array_equal(y.numpy(), expected)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_and_broadcast_variables(mode):
    r, n = ranks()
    root = n - 1
    y = run(mode, lambda t: hvd_tf.broadcast(t, root), tf.constant([r, r * 10]))
    np.testing.assert_array_equal(y.numpy(), [root, root * 10])
    v = [tf.Variable(tf.fill([3], float(r))), tf.Variable(r, dtype=tf.int64)]
    if mode == "eager":
        hvd_tf.broadcast_variables(v, root_rank=root)
    else:
        @tf.function
        def assign():
            hvd_tf.broadcast_variables(v, root_rank=root)
        assign()
    np.testing.assert_array_equal(v[0].numpy(), [root] * 3)
    assert v[1].numpy() == root


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_with_received_splits(mode):
    r, n = ranks()
    # Rank r sends i+1 rows to rank i, each row holding r*100 + i.
    splits = tf.constant([i + 1 for i in range(n)], tf.int32)
    rows = np.concatenate([np.full([i + 1], r * 100 + i, np.float32) for i in range(n)])
    out, received = run(mode, lambda t, s: hvd_tf.alltoall(t, splits=s), tf.constant(rows),
                        splits)
    np.testing.assert_array_equal(received.numpy(), [r + 1] * n)
    assert received.dtype == tf.int32
    expected = np.concatenate([np.full([r + 1], src * 100 + r, np.float32) for src in range(n)])
    np.testing.assert_array_equal(out.numpy(), expected)
    even = run(mode, hvd_tf.alltoall, tf.fill([n, 2], r))
    np.testing.assert_array_equal(even.numpy(), np.repeat(np.arange(n)[:, None], 2, 1))


@pytest.mark.parametrize("mode", MODES)
def test_reducescatter(mode):
    r, n = ranks()
    x = tf.reshape(tf.range(2 * n * 3, dtype=tf.float32), [2 * n, 3]) + r
    y = run(mode, lambda t: hvd_tf.reducescatter(t, op=hvd_tf.Sum), x)
    full = sum(np.arange(2 * n * 3, dtype=np.float32).reshape(2 * n, 3) + i for i in range(n))
    np.testing.assert_array_equal(y.numpy(), full[2 * r:2 * r + 2])


@pytest.mark.parametrize("mode", MODES)
def test_gradients(mode):
    r, n = ranks()

    def grads(x):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            summed = hvd_tf.allreduce(x, op=hvd_tf.Sum)
            gathered = hvd_tf.allgather(x)
            bcast = hvd_tf.broadcast(x, 0)
            loss_g = tf.reduce_sum(gathered * tf.range(1.0, tf.cast(tf.shape(gathered)[0], tf.float32) + 1))
        return (tape.gradient(summed, x), tape.gradient(loss_g, x),
                tape.gradient(bcast, x))
    x = tf.constant([float(r), 1.0])
    g_sum, g_gather, g_bcast = run(mode, grads, x)
    # Sum's gradient: an allreduce (Sum) of ones.
    np.testing.assert_array_equal(g_sum.numpy(), [n, n])
    # allgather's: this rank's rows of the averaged gradient (the same on every rank).
    np.testing.assert_array_equal(g_gather.numpy(), [2 * r + 1, 2 * r + 2])
    # broadcast's: the averaged gradient on the root, zero elsewhere.
    np.testing.assert_array_equal(g_bcast.numpy(), [1, 1] if r == 0 else [0, 0])


def test_graph_mode_runs_independent_unnamed_ops_in_any_order():
    """In a TF1-style graph, TensorFlow runs independent ops in any order, not the same
    on every rank: unnamed collectives must pair up by their graph names, not by call
    order (with call order, one rank's allreduce met the other's allgather and both
    waited for ever)."""
    r, n = ranks()
    with tf.Graph().as_default():
        xs = [tf.constant([float(r + k)] * (k + 1)) for k in range(6)]
        ops = []
        for k, x in enumerate(xs):
            ops.append(hvd_tf.allreduce(x, op=hvd_tf.Sum) if k % 2 else hvd_tf.allgather(x))
        grads = tf.compat.v1.gradients(hvd_tf.allgather(xs[0]), xs[0])
        with tf.compat.v1.Session() as session:
            results = session.run(ops + grads)
    for k, got in enumerate(results[:6]):
        if k % 2:
            np.testing.assert_array_equal(got, [float(sum(range(n)) + n * k)] * (k + 1))
        else:
            np.testing.assert_array_equal(got, [float(q + k) for q in range(n)
                                                for _ in range(k + 1)])
    np.testing.assert_array_equal(results[6], [1.0])


def _data(rank):
    rng = np.random.default_rng(rank)
    return (rng.standard_normal([8, 3]).astype(np.float32),
            rng.standard_normal([8, 1]).astype(np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_distributed_gradient_tape_trains_identically(mode):
    r, n = ranks()
    w = tf.Variable(tf.zeros([3, 1]))
    b = tf.Variable(tf.zeros([1]))
    x, y = (tf.constant(a) for a in _data(r))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(x, w) + b - y) ** 2)
        tape = hvd_tf.DistributedGradientTape(tape)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
    step_fn = step if mode == "eager" else tf.function(step)
    for _ in range(3):
        step_fn()
    # The same steps with every rank's data, here in numpy: the averaged gradient.
    wn, bn = np.zeros([3, 1], np.float32), np.zeros([1], np.float32)
    for _ in range(3):
        gws, gbs = [], []
        for i in range(n):
            xi, yi = _data(i)
            err = 2 * (xi @ wn + bn - yi) / xi.shape[0]
            gws.append(xi.T @ err)
            gbs.append(err.sum(0))
        wn = wn - 0.1 * np.mean(gws, 0)
        bn = bn - 0.1 * np.mean(gbs, 0)
    np.testing.assert_allclose(w.numpy(), wn, rtol=1e-5, atol=1e-6)
    gathered = hvd_tf.allgather(tf.reshape(w, [1, 3])).numpy()
    assert (gathered == gathered[0]).all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_indexed_slices_gradients(mode, sparse_as_dense):
    r, n = ranks()
    table = tf.Variable(tf.zeros([4, 2]))
    ids = tf.constant([r % 4, 3])

    def grad():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, ids))
        tape = hvd_tf.DistributedGradientTape(tape, op=hvd_tf.Sum,
                                              sparse_as_dense=sparse_as_dense)
        g = tape.gradient(loss, table)
        return tf.convert_to_tensor(g), isinstance(g, tf.IndexedSlices)
    g, _ = run(mode, grad)
    expected = np.zeros([4, 2], np.float32)
    for i in range(n):
        expected[i % 4] += 1
        expected[3] += 1
    np.testing.assert_array_equal(g.numpy(), expected)
    if mode == "eager":
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, ids))
        g = tape.gradient(loss, table)
        reduced = hvd_tf.allreduce(g, op=hvd_tf.Average)
        assert isinstance(reduced, tf.IndexedSlices)
        np.testing.assert_allclose(tf.convert_to_tensor(reduced).numpy(), expected / n)


@pytest.mark.parametrize("mode", MODES)
def test_mismatched_shapes_fail_on_every_rank(mode):
    r, _ = ranks()
    with pytest.raises((hvd_tf.HorovodInternalError, tf.errors.OpError)) as info:
        run(mode, hvd_tf.allreduce, tf.zeros([r + 2]))
    assert "shape" in str(info.value).lower()
    # The job goes on: the next collective pairs up.
    np.testing.assert_array_equal(hvd_tf.allreduce(tf.ones([2]), op=hvd_tf.Sum).numpy(),
                                  [hvd_tf.size()] * 2)


def test_objects():
    r, n = ranks()
    assert hvd_tf.broadcast_object({"rank": r}, root_rank=0) == {"rank": 0}
    assert hvd_tf.allgather_object(r) == list(range(n))


def test_outputs_are_64_byte_aligned():
    r, n = ranks()
    a = np.arange(5 * n, dtype=np.float32).reshape(n * 5, 1)[:, 0] + r
    outs = [collectives.allreduce(a), collectives.broadcast(a, 0), collectives.allgather(a),
            collectives.alltoall(a)[0], collectives.alltoall(a)[1],
            collectives.reducescatter(a)] + collectives.grouped_allreduce([a, a + 1])
    assert all(is_aligned(o) for o in outs), [o.ctypes.data % 64 for o in outs]
    # An unaligned array is copied into an aligned one before TensorFlow sees it.
    unaligned = aligned_bytes(4 * 9)[4:].view(np.float32)
    unaligned[:] = np.arange(8)
    assert not is_aligned(unaligned) and is_aligned(_bridge.aligned(unaligned))
    y = tf.function(lambda t: _bridge.run(lambda _: [unaligned], [t], [tf.float32])[0])(
        tf.zeros([1]))
    np.testing.assert_array_equal(y.numpy(), np.arange(8))


def test_graph_allreduce_reuses_outputs_only_once_released():
    from hvd.tensorflow._reused_outputs import ReusedOutputs
    outputs = ReusedOutputs(keep=2)
    first = outputs.take((4, 3), np.float32)
    assert is_aligned(first) and first.shape == (4, 3) and first.dtype == np.float32
    address = first.ctypes.data
    second = outputs.take((4, 3), np.float32)  # `first` is held: another array
    assert second.ctypes.data != address
    view = first[1:]
    del first
    assert outputs.take((4, 3), np.float32).ctypes.data not in (address, second.ctypes.data)
    del view  # nothing refers to the first array's memory any more
    assert outputs.take((4, 3), np.float32).ctypes.data == address
    assert outputs.take((5,), np.float32).shape == (5,)  # another shape: a new array


def test_graph_allreduce_keeps_the_results_a_caller_holds():
    r, n = ranks()
    reduce = tf.function(lambda t: hvd_tf.allreduce(t, op=hvd_tf.Sum, name="reused.out"))
    held = [reduce(tf.fill([1000], float(step + r))) for step in range(4)]
    for step, y in enumerate(held):
        np.testing.assert_array_equal(y.numpy(), np.full(1000, n * step + n * (n - 1) / 2))
    # Released results are reduced into again; the values stay right.
    for step in range(4):
        y = reduce(tf.fill([1000], float(step + r))).numpy()
        np.testing.assert_array_equal(y, np.full(1000, n * step + n * (n - 1) / 2))


def test_graph_grouped_allreduce_keeps_the_results_a_caller_holds():
    """The same for each member of a group (a gradient tape's reduction)."""
    r, n = ranks()
    reduce = tf.function(lambda a, b: hvd_tf.grouped_allreduce(
        [a, b], op=hvd_tf.Sum, name="reused.group"))
    held = [reduce(tf.fill([1000], float(step + r)), tf.fill([3], step * 10.0 + r))
            for step in range(4)]
    for step, (a, b) in enumerate(held):
        np.testing.assert_array_equal(a.numpy(), np.full(1000, n * step + n * (n - 1) / 2))
        np.testing.assert_array_equal(b.numpy(), np.full(3, n * step * 10.0 + n * (n - 1) / 2))
    for step in range(4):
        a, b = reduce(tf.fill([1000], float(step + r)), tf.fill([3], step * 10.0 + r))
        np.testing.assert_array_equal(a.numpy(), np.full(1000, n * step + n * (n - 1) / 2))
        np.testing.assert_array_equal(b.numpy(), np.full(3, n * step * 10.0 + n * (n - 1) / 2))
