"""Runs the gpu suite's tests from a gpu-bundle without meson: each test's command with
the bundle's mpiexec and build folder, its environment, and a deadline for the whole
suite. Prints one line per test; exit status 1 if any failed or timed out.

  python3 run_suite.py BUNDLE_DIR LOG_FILE [SECONDS]
"""
import json
import os
import signal
import subprocess
import sys
import time


def command(test, bundle, built_at):
    cmd = list(test["cmd"])
    if os.path.basename(cmd[0]) == "mpiexec.sh":  # the build's launcher wrapper
        cmd[0] = os.path.join(bundle, "bin", "mpiexec")
    return [c.replace(built_at, os.path.join(bundle, "build")) for c in cmd]


def main():
    bundle, log_path = sys.argv[1], sys.argv[2]
    deadline = time.time() + float(sys.argv[3] if len(sys.argv) > 3 else 600)
    spec = json.load(open(os.path.join(bundle, "gpu_tests.json")))
    failed = 0
    with open(log_path, "w") as log:
        for test in spec["tests"]:
            left = deadline - time.time()
            if left < 10:
                print(f"{'NOT RUN':14}        {test['name']} (suite deadline)", flush=True)
                failed += 1
                continue
            cmd = command(test, bundle, spec["build"])
            env = dict(os.environ)
            # The bundle's library path stands; the build's own folders do not exist here.
            env.update({k: v for k, v in (test["env"] or {}).items() if k != "LD_LIBRARY_PATH"})
            start = time.time()
            proc = subprocess.Popen(cmd, cwd=os.path.join(bundle, "build"), env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
            try:
                text, _ = proc.communicate(timeout=min(test["timeout"] or 300, left - 5))
                verdict = {0: "OK", 77: "SKIP"}.get(proc.returncode, f"FAIL rc={proc.returncode}")
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                text, _ = proc.communicate()
                verdict = "TIMEOUT"
            took = time.time() - start
            failed += verdict not in ("OK", "SKIP")
            log.write(f"===== {test['name']} {verdict} {took:.1f}s\n$ {' '.join(cmd)}\n"
                      f"{text[-6000:]}\n")
            log.flush()
            print(f"{verdict:14} {took:5.1f}s {test['name']}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
