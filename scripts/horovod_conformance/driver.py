"""Runs Horovod's own PyTorch or TensorFlow tests against libhvd's horovod stand-in and prints a
pass/fail/skip table (see scripts/horovod-conformance.sh for the interface).

Each test file runs in MPI jobs of NP ranks. result_plugin.py records every test's
start and outcome per rank as it happens; a test that runs too long is recorded as a
hang and ends its job, and the tests it did not reach run in a fresh job. A test that
crashed, or hung while some rank never reached it (held in an earlier test that failed
elsewhere), runs once more in a fresh job before it is blamed. A test's outcome is the
worst over the ranks: failed > hang > crashed > skipped > passed.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial

print = partial(print, flush=True)  # noqa: A001 - progress shows as it happens

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {"torch": ["test_torch.py", "test_timeline.py", "test_adasum_pytorch.py"],
         "tensorflow": ["test_tensorflow.py", "test_tensorflow_process_sets.py",
                        "test_tensorflow_process_sets_dynamic.py"]}
RANKING = ["failed", "error", "hang", "crashed", "skipped", "passed"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("checkout", help="a Horovod source tree (with test/parallel)")
    p.add_argument("np", type=int, nargs="?", default=2)
    p.add_argument("framework", nargs="?", default="torch", choices=sorted(FILES))
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--test-timeout", type=int, default=60)
    p.add_argument("--details", action="store_true", help="print each failure's text")
    p.add_argument("-k", dest="select", default=None, help="pytest -k expression")
    return p.parse_args()


def job_env(out_dir, timeout):
    env = dict(os.environ)
    paths = [HERE]
    for module in ("mock", "cloudpickle"):
        probe = subprocess.run([ARGS.python, "-c", f"import {module}"], capture_output=True)
        if probe.returncode != 0:
            paths.append(os.path.join(HERE, "shims"))
            break
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    env["HVD_CONFORMANCE_DIR"] = out_dir
    env["HVD_CONFORMANCE_TEST_TIMEOUT"] = str(timeout)
    env["HVD_HOROVOD_COMPAT"] = "force"
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def collect(test_dir, name, env):
    # Test ids relative to test/parallel whatever pytest configuration the checkout's
    # root holds (with one, ids would be relative to the root).
    cmd = [ARGS.python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
           f"--rootdir={test_dir}", name]
    if ARGS.select:
        cmd += ["-k", ARGS.select]
    res = subprocess.run(cmd, cwd=test_dir, env=env, capture_output=True, text=True)
    # Only the file's own test ids: TensorFlow's start-up lines hold "::" as well.
    ids = [line.strip() for line in res.stdout.splitlines()
           if line.strip().startswith(name + "::")]
    if not ids and ARGS.select and "deselected" in res.stdout:
        return ids  # -k selected none of this file's tests
    if not ids:
        sys.exit(f"collecting {name} found no tests:\n{res.stdout[-3000:]}{res.stderr[-3000:]}")
    return ids


def read_records(out_dir):
    per_test = {}
    for fname in os.listdir(out_dir):
        if not fname.endswith(".jsonl"):
            continue
        with open(os.path.join(out_dir, fname)) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a killed rank
                per_test.setdefault(rec["test"], []).append((fname, rec))
    return per_test


def started_on(records):
    """How many ranks reported starting the test."""
    return len({rank_file for rank_file, rec in records if rec["outcome"] == "start"})


def verdict(records, np_ranks):
    """(outcome, detail) of one test from its records, or None if it never started."""
    if not records:
        return None
    outcomes = {}
    for rank_file, rec in records:
        if rec["outcome"] in ("start", "finish"):
            outcomes.setdefault(rank_file, None)
        elif outcomes.get(rank_file) is None or \
                RANKING.index(rec["outcome"]) < RANKING.index(outcomes[rank_file][0]):
            outcomes[rank_file] = (rec["outcome"], rec["detail"])
    finals = [o for o in outcomes.values() if o is not None]
    if len(finals) < np_ranks:
        finals.append(("crashed", "a rank ended (or was killed) without reporting"))
    return min(finals, key=lambda o: RANKING.index(o[0]))


def run_job(test_dir, tests, env, out_dir):
    """Runs the tests in one job; returns when it ends or stops making progress."""
    cmd = [ARGS.mpiexec, "-n", str(ARGS.np), ARGS.python, "-m", "pytest", "-q", "-p",
           "no:cacheprovider", "-p", "result_plugin", "-rN", f"--rootdir={test_dir}"] + tests
    log = open(os.path.join(out_dir, "job.log"), "a")
    proc = subprocess.Popen(cmd, cwd=test_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    last_size, last_change = -1, time.time()
    while proc.poll() is None:
        time.sleep(1)
        size = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)
                   if f.endswith(".jsonl"))
        if size != last_size:
            last_size, last_change = size, time.time()
        elif time.time() - last_change > ARGS.test_timeout + 30:
            break
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_file(checkout, name):
    test_dir = os.path.join(checkout, "test", "parallel")
    out_dir = tempfile.mkdtemp(prefix="hvd-conformance-")
    env = job_env(out_dir, ARGS.test_timeout)
    tests = collect(test_dir, name, env)
    if not tests:
        shutil.rmtree(out_dir, ignore_errors=True)
        return tests, {}, out_dir
    results = {}
    remaining = list(tests)
    retried = set()
    job = 0
    while remaining:
        job_dir = os.path.join(out_dir, f"job{job}")
        os.makedirs(job_dir)
        env["HVD_CONFORMANCE_DIR"] = job_dir
        run_job(test_dir, remaining, env, job_dir)
        job += 1
        records = read_records(job_dir)
        started = [t for t in remaining if verdict(records.get(t), ARGS.np) is not None]
        if not started:
            with open(os.path.join(job_dir, "job.log")) as f:
                tail = f.read()[-3000:]
            for t in remaining:
                results[t] = ("crashed", "the job ended before this test started:\n" + tail)
            break
        for t in started:
            outcome = verdict(records[t], ARGS.np)
            # A rank killed because a peer hung or died elsewhere, or a hang while a rank
            # was still held in an earlier test (one that failed on the other ranks and
            # left its collectives unmatched): run the test again once in a fresh job
            # before blaming it.
            collateral = outcome[0] == "hang" and started_on(records[t]) < ARGS.np
            if (outcome[0] == "crashed" or collateral) and t not in retried:
                retried.add(t)
                continue
            results[t] = outcome
        remaining = [t for t in remaining if t not in results]
    return tests, results, out_dir


def main():
    global ARGS
    ARGS = parse_args()
    checkout = os.path.abspath(ARGS.checkout)
    if not os.path.isdir(os.path.join(checkout, "test", "parallel")):
        sys.exit(f"{checkout} has no test/parallel directory: point at a Horovod source tree")
    totals = {}
    start = time.time()
    for name in FILES[ARGS.framework]:
        tests, results, out_dir = run_file(checkout, name)
        if not tests:
            continue
        # The job logs are kept for a file where something failed or hung, and removed
        # otherwise, so that repeated runs do not pile folders up in /tmp.
        clean = all(results[t][0] in ("passed", "skipped") for t in tests)
        if clean:
            shutil.rmtree(out_dir, ignore_errors=True)
        where = "all passed or skipped: job logs removed" if clean else f"job logs in {out_dir}"
        print(f"\n{name} on {ARGS.np} ranks ({where})")
        for t in tests:
            outcome, detail = results[t]
            totals[outcome] = totals.get(outcome, 0) + 1
            short = t.split("::")[-1]
            print(f"  {outcome:8} {short}")
            if ARGS.details and outcome not in ("passed", "skipped"):
                print("      " + detail.strip().replace("\n", "\n      ")[-1500:])
            elif outcome == "skipped":
                print(f"           ({detail.strip()[:100]})")
    summary = ", ".join(f"{totals[k]} {k}" for k in RANKING if k in totals)
    print(f"\ntotal on {ARGS.np} ranks: {summary} ({time.time() - start:.0f} s)")
    sys.exit(0 if all(k in ("passed", "skipped") for k in totals) else 1)


if __name__ == "__main__":
    main()
