"""What one allreduce inside a tf.function costs above TensorFlow's own floor.

Run under 2 (or more) ranks, with a TensorFlow 2 that sees libhvd's `hvd` package:

    hvdrun -np 2 python bench/tf_allreduce_overhead.py [--sizes 4K,16M] [--json FILE]
    mpiexec -n 2 python bench/tf_allreduce_overhead.py ...

For each size (bytes of float32) three calls are timed, in alternation, on the same
tensor, each one a tf.function called eagerly:

- floor: a tf.function that runs tf.numpy_function with an identity function (stateful,
  as a collective must be): what any collective that reaches its data through
  numpy_function pays at least;
- hvd: a tf.function that runs hvd.tensorflow.allreduce(x, op=Sum) (named, as a
  gradient's allreduce is);
- raw MPI: MPI_Allreduce (mpi4py, in place on a numpy array of the same size), outside
  TensorFlow: the transport's own time for the same bytes. Needs mpi4py built against
  the MPI that runs the job (pip install mpi4py, or --mpi4py-path DIR holding one);
  without it that column is left out.

A round times --calls calls of each, one after the other; the figure of each is the
median over --rounds rounds of the mean time per call, slowest rank. Printed: the three
medians, hvd - floor (what libhvd adds to TensorFlow's floor, the transport included),
hvd - floor - raw (what the binding adds beyond floor and transport), and
hvd / (floor + raw). With --json, one JSON line per size is appended to FILE.
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4K,16M",
                        help="tensor sizes in bytes, comma separated (K, M suffixes); "
                        "float32 tensors (default 4K,16M)")
    parser.add_argument("--rounds", type=int, default=15,
                        help="rounds; each times every call kind (default 15)")
    parser.add_argument("--calls", type=int, default=0,
                        help="calls per kind per round (default: 200 below 1 MB, else 10)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls of each kind "
                        "first (default 20)")
    parser.add_argument("--json", metavar="FILE",
                        help="append one JSON line per size to FILE (rank 0)")
    parser.add_argument("--note", default="", help="a free-text field copied into the JSON")
    parser.add_argument("--mpi4py-path", metavar="DIR",
                        help="a site-packages folder that holds an mpi4py built against "
                        "this MPI, put on sys.path for the raw reference only")
    return parser.parse_args()


def load_average():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


def main():
    args = parse_args()
    import numpy as np
    import tensorflow as tf
    import hvd.tensorflow as hvd

    hvd.init()
    mpi = None
    if args.mpi4py_path:
        sys.path.append(args.mpi4py_path)
    try:
        from mpi4py import MPI  # after hvd.init(): libhvd initialized MPI, mpi4py joins
        mpi = MPI.COMM_WORLD
    except ImportError:
        if hvd.rank() == 0:
            print("mpi4py not found: no raw MPI reference", file=sys.stderr)

    def floor_identity(a):
        return a

    @tf.function
    def floor(x):
        y = tf.numpy_function(floor_identity, [x], tf.float32, stateful=True)
        y.set_shape(x.shape)
        return y

    @tf.function
    def reduce(x):
        return hvd.allreduce(x, op=hvd.Sum, name="bench.allreduce")

    results = []
    for nbytes in [parse_size(s) for s in args.sizes.split(",")]:
        count = max(nbytes // 4, 1)
        calls = args.calls or (200 if nbytes < (1 << 20) else 10)
        x = tf.constant(np.arange(count, dtype=np.float32) % 7 + hvd.rank())
        expected = (np.arange(count, dtype=np.float32) % 7) * hvd.size() + \
            sum(range(hvd.size()))
        buffer = np.arange(count, dtype=np.float32) % 7

        got = reduce(x).numpy()
        if not np.array_equal(got, expected):
            raise SystemExit(f"allreduce of {nbytes} bytes gave a wrong result")
        if not np.array_equal(floor(x).numpy(), x.numpy()):
            raise SystemExit("the floor's identity changed its input")

        def time_floor():
            for _ in range(calls):
                floor(x)

        def time_hvd():
            for _ in range(calls):
                reduce(x)

        def time_raw():
            for _ in range(calls):
                mpi.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)

        kinds = {"floor": time_floor, "hvd": time_hvd}
        if mpi is not None:
            kinds["raw"] = time_raw
        for run in kinds.values():
            for _ in range(max(args.warmup // calls, 1)):
                run()
        per_call = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind, run in kinds.items():
                hvd.barrier()
                start = time.perf_counter()
                run()
                per_call[kind].append((time.perf_counter() - start) / calls)
        # The slowest rank's time of each round.
        per_call = {kind: [float(t) for t in np.asarray(hvd.allreduce(
            np.array(times), op=hvd.Max, name=f"bench.slowest.{kind}.{nbytes}"))]
            for kind, times in per_call.items()}
        med = {kind: statistics.median(times) * 1e6 for kind, times in per_call.items()}
        row = {"bench": "tf_allreduce_overhead", "bytes": nbytes, "ranks": hvd.size(),
               "calls": calls, "rounds": args.rounds,
               "floor_us": round(med["floor"], 2), "hvd_us": round(med["hvd"], 2),
               "added_us": round(med["hvd"] - med["floor"], 2),
               "min_us": {k: round(min(v) * 1e6, 2) for k, v in per_call.items()},
               "max_us": {k: round(max(v) * 1e6, 2) for k, v in per_call.items()},
               "tensorflow": tf.__version__, "load": load_average(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "note": args.note}
        if "raw" in med:
            row["raw_mpi_us"] = round(med["raw"], 2)
            row["added_beyond_raw_us"] = round(med["hvd"] - med["floor"] - med["raw"], 2)
            row["vs_floor_plus_raw"] = round(med["hvd"] / (med["floor"] + med["raw"]), 3)
        results.append(row)
        if hvd.rank() == 0:
            line = (f"{nbytes:>10} B  floor {med['floor']:9.1f} us  hvd {med['hvd']:9.1f} us"
                    f"  hvd-floor {med['hvd'] - med['floor']:8.1f} us")
            if "raw" in med:
                line += (f"  raw MPI {med['raw']:9.1f} us  hvd-floor-raw "
                         f"{row['added_beyond_raw_us']:8.1f} us  hvd/(floor+raw) "
                         f"{row['vs_floor_plus_raw']:.3f}")
            print(line + f"  load {row['load']}", flush=True)
    if hvd.rank() == 0 and args.json:
        with open(args.json, "a") as out:
            for row in results:
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
