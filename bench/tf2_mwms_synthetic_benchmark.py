"""Horovod's tensorflow2_synthetic_benchmark.py, on TensorFlow's own
MultiWorkerMirroredStrategy instead of Horovod: the same model, batch, synthetic data,
optimizer, step and timing, and the same output lines, so that the two can be read side
by side.

    python bench/tf2_mwms_synthetic_benchmark.py --workers 2 --model MobileNetV2 \\
        --batch-size 8 --num-iters 5 --num-batches-per-iter 5

With --workers N it starts N workers of itself on this machine (TF_CONFIG naming N free
localhost ports) and waits for them; worker 0 prints. Without it, it is one worker of
a job that TF_CONFIG describes. The gradients are all-reduced by the strategy's CPU
collective ops (CommunicationImplementation.RING) inside optimizer.apply_gradients,
summed where Horovod averages (the same bytes and the same work); --batch-size is per
worker, as in Horovod's script. Horovod's script broadcasts the variables after its
first step; here the strategy makes them equal when they are created.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import timeit


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--model', type=str, default='ResNet50', help='model to benchmark')
    parser.add_argument('--batch-size', type=int, default=32, help='input batch size')
    parser.add_argument('--num-warmup-batches', type=int, default=10,
                        help='number of warm-up batches that don\'t count towards benchmark')
    parser.add_argument('--num-batches-per-iter', type=int, default=10,
                        help='number of batches per benchmark iteration')
    parser.add_argument('--num-iters', type=int, default=10,
                        help='number of benchmark iterations')
    parser.add_argument('--no-cuda', action='store_true', default=False,
                        help='accepted, as Horovod\'s script does: this one runs on the CPU')
    parser.add_argument('--workers', type=int, default=0,
                        help='start this many local workers (default: be one worker of '
                        'the job TF_CONFIG describes)')
    return parser.parse_args()


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def launch(workers):
    """Starts `workers` copies of this script as one job; returns the worst exit code."""
    cluster = {"worker": [f"localhost:{p}" for p in free_ports(workers)]}
    argv = [a for a in sys.argv[1:]]
    i = argv.index("--workers") if "--workers" in argv else None
    if i is not None:
        del argv[i:i + 2]
    argv = [a for a in argv if not a.startswith("--workers=")]
    procs = []
    for index in range(workers):
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}))
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv,
                                      env=env,
                                      stdout=None if index == 0 else subprocess.DEVNULL))
    return max(p.wait() for p in procs)


def worker(args):
    import numpy as np
    import tensorflow as tf
    from tensorflow.keras import applications

    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    task = strategy.cluster_resolver.task_id
    size = strategy.num_replicas_in_sync

    with strategy.scope():
        model = getattr(applications, args.model)(weights=None)
        opt = tf.optimizers.SGD(0.01)

    data = tf.random.uniform([args.batch_size, 224, 224, 3])
    target = tf.random.uniform([args.batch_size, 1], minval=0, maxval=999, dtype=tf.int64)

    @tf.function
    def benchmark_step():
        def replica_step():
            with tf.GradientTape() as tape:
                probs = model(data, training=True)
                loss = tf.losses.sparse_categorical_crossentropy(target, probs)
            gradients = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(gradients, model.trainable_variables))
        strategy.run(replica_step)

    def log(s):
        if task == 0:
            print(s, flush=True)

    log('Model: %s' % args.model)
    log('Batch size: %d' % args.batch_size)
    log('Number of CPUs: %d' % size)
    with tf.device('CPU'):
        log('Running warmup...')
        benchmark_step()
        timeit.timeit(benchmark_step, number=args.num_warmup_batches)
        log('Running benchmark...')
        img_secs = []
        for x in range(args.num_iters):
            time = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
            img_sec = args.batch_size * args.num_batches_per_iter / time
            log('Iter #%d: %.1f img/sec per CPU' % (x, img_sec))
            img_secs.append(img_sec)
        img_sec_mean = np.mean(img_secs)
        img_sec_conf = 1.96 * np.std(img_secs)
        log('Img/sec per CPU: %.1f +-%.1f' % (img_sec_mean, img_sec_conf))
        log('Total img/sec on %d CPU(s): %.1f +-%.1f' %
            (size, size * img_sec_mean, size * img_sec_conf))


def main():
    args = parse_args()
    if args.workers:
        sys.exit(launch(args.workers))
    if "TF_CONFIG" not in os.environ:
        sys.exit("tf2_mwms_synthetic_benchmark.py: give --workers N, or run it as a worker "
                 "of a job that TF_CONFIG describes")
    worker(args)


if __name__ == "__main__":
    main()
