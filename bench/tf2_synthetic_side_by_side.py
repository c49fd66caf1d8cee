"""Horovod's tensorflow2_synthetic_benchmark.py on libhvd, on real Horovod, and the same
step on TensorFlow's MultiWorkerMirroredStrategy, alternated, on this machine.

    python3 bench/tf2_synthetic_side_by_side.py --horovod-checkout HOROVOD \\
        --libhvd-python VENV/bin/python --horovod-python HVENV/bin/python \\
        --rounds 3 --json bench/results/FILE.jsonl \\
        -- --model MobileNetV2 --batch-size 8 --num-iters 5 --num-batches-per-iter 5

Contenders (each left out when its interpreter is not given):
- libhvd: `hvdrun -np N PYTHON SCRIPT ARGS`, PYTHON a
  TensorFlow 2 that imports libhvd's `horovod` stand-in (pip install . in its venv);
- horovod: `mpiexec -n N PYTHON SCRIPT ARGS`, PYTHON
  one whose horovod is real Horovod built against the same MPI;
- mwms: `PYTHON bench/tf2_mwms_synthetic_benchmark.py --workers N ARGS` (default:
  the libhvd interpreter, i.e. the same TensorFlow).

SCRIPT is examples/tensorflow2/tensorflow2_synthetic_benchmark.py of the Horovod
source tree that --horovod-checkout names (0.28.1's was measured), run unchanged. Every contender gets the same ARGS. A round runs each contender once, the
order rotating from round to round; each run's "Total img/sec" and the load average
before it are printed and, with --json, appended to FILE as one JSON line, followed by
one summary line per contender (median over the rounds, and libhvd's ratio to it).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOTAL = re.compile(r"Total img/sec on (\d+) \w+\(s\): ([0-9.]+) \+-([0-9.]+)")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--horovod-checkout", required=True,
                        help="a Horovod source tree: its examples/tensorflow2/"
                        "tensorflow2_synthetic_benchmark.py is what runs")
    parser.add_argument("--libhvd-python", help="interpreter for libhvd's run")
    parser.add_argument("--hvdrun", help="hvdrun to launch it (default: beside "
                        "--libhvd-python, else on PATH)")
    parser.add_argument("--libhvd-env", action="append", default=[], metavar="KEY=VALUE",
                        help="set in libhvd's run only (repeatable), e.g. PYTHONPATH="
                        "bindings/python and HVD_LIBRARY=build/lib/libhvd.so.0 to run a "
                        "build tree")
    parser.add_argument("--horovod-python", help="interpreter with real Horovod")
    parser.add_argument("--mpiexec", default="mpiexec.mpich",
                        help="launcher for real Horovod (default mpiexec.mpich)")
    parser.add_argument("--mwms-python", help="interpreter for the MultiWorkerMirrored"
                        "Strategy run (default: --libhvd-python)")
    parser.add_argument("--no-mwms", action="store_true", help="leave that one out")
    parser.add_argument("-np", "--ranks", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", metavar="FILE", help="append JSON lines to FILE")
    parser.add_argument("--note", default="", help="free text copied into the JSON lines")
    parser.add_argument("script_args", nargs=argparse.REMAINDER,
                        help="-- then the benchmark's arguments, the same for every "
                        "contender")
    args = parser.parse_args()
    if args.script_args and args.script_args[0] == "--":
        args.script_args = args.script_args[1:]
    return args


def commands(args):
    script = os.path.join(args.horovod_checkout, "examples", "tensorflow2",
                          "tensorflow2_synthetic_benchmark.py")
    if not os.path.exists(script):
        sys.exit(f"no {script}: --horovod-checkout must name a Horovod source tree")
    mwms = os.path.join(HERE, "tf2_mwms_synthetic_benchmark.py")
    n = str(args.ranks)
    found = {}
    if args.libhvd_python:
        hvdrun = args.hvdrun or os.path.join(os.path.dirname(args.libhvd_python), "hvdrun")
        if not os.path.exists(hvdrun):
            hvdrun = shutil.which("hvdrun")
        if hvdrun is None:
            sys.exit("no hvdrun beside --libhvd-python nor on PATH: give --hvdrun")
        found["libhvd"] = [hvdrun, "-np", n, args.libhvd_python, script]
    if args.horovod_python:
        found["horovod"] = [args.mpiexec, "-n", n, args.horovod_python, script]
    mwms_python = args.mwms_python or args.libhvd_python
    if mwms_python and not args.no_mwms:
        found["mwms"] = [mwms_python, mwms, "--workers", n]
    if not found:
        sys.exit("nothing to run: give --libhvd-python, --horovod-python or --mwms-python")
    return {name: command + args.script_args for name, command in found.items()}


def load_average():
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def run_one(name, command, timeout, extra_env):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    env.update(extra_env)
    load = load_average()
    start = time.time()
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    found = TOTAL.search(proc.stdout)
    if proc.returncode != 0 or found is None:
        sys.stderr.write(proc.stdout[-4000:])
        sys.exit(f"{name}: exit status {proc.returncode}, no 'Total img/sec' line")
    iters = [float(x) for x in re.findall(r"Iter #\d+: ([0-9.]+) img/sec", proc.stdout)]
    return {"contender": name, "img_per_s": float(found.group(2)),
            "conf": float(found.group(3)), "ranks": int(found.group(1)),
            "iter_img_per_s_per_rank": iters, "load_before": load,
            "load_after": load_average(), "wall_s": round(time.time() - start, 1),
            "command": " ".join(command)}


def main():
    args = parse_args()
    runs = commands(args)
    names = list(runs)
    libhvd_env = dict(item.split("=", 1) for item in args.libhvd_env)
    out = open(args.json, "a") if args.json else None
    date = time.strftime("%Y-%m-%d")
    results = {name: [] for name in names}
    for round_index in range(args.rounds):
        order = names[round_index % len(names):] + names[:round_index % len(names)]
        for name in order:
            row = run_one(name, runs[name], args.timeout,
                          libhvd_env if name == "libhvd" else {})
            row.update(round=round_index, date=date, note=args.note)
            results[name].append(row["img_per_s"])
            print(f"round {round_index} {name:8} {row['img_per_s']:8.1f} img/s "
                  f"(+-{row['conf']:.1f}), load before {row['load_before']}", flush=True)
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
    medians = {name: statistics.median(values) for name, values in results.items()}
    for name in names:
        summary = {"kind": "summary", "contender": name, "img_per_s_median": medians[name],
                   "img_per_s": results[name], "rounds": args.rounds, "date": date,
                   "args": " ".join(args.script_args), "note": args.note}
        if "libhvd" in medians and name != "libhvd":
            summary["libhvd_vs_this"] = round(medians["libhvd"] / medians[name], 3)
        print(f"{name:8} median {medians[name]:8.1f} img/s over {args.rounds} rounds" +
              (f", libhvd / {name} = {summary['libhvd_vs_this']}"
               if "libhvd_vs_this" in summary else ""))
        if out:
            out.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
