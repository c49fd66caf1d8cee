"""hvdrun and hvd.elastic together: a torch training script (elastic_hvdrun_train.py)
run by the real hvdrun as an elastic job on this machine, its hosts given by a
discovery script that prints what a file of this test says.

Generation 0 runs on localhost:2. Once it has committed three times, the test makes
the script print localhost:3: every rank is interrupted at the same commit, and
generation 1 runs 3 ranks from that state (nothing rolled back). Rank 1 of
generation 1 ends itself at batch 11: localhost is left out for 1 to 2 s
(--blacklist-cooldown-range 1 2), comes back, and generation 2 restores the last
commit bit for bit and finishes the epoch; hvdrun exits 0. Every sample of the epoch
is trained on exactly once, but for those after the last commit before the failure,
which are trained on again.

A second job's discovery script prints a host name that does not resolve beside
localhost: hvdrun leaves that host out with a warning and runs the job on localhost.

This process itself is no MPI rank: meson runs it with plain pytest; HVD_HVDRUN
names hvdrun.
"""
import json
import os
import re
import stat
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")

HVDRUN = os.environ.get("HVD_HVDRUN", "hvdrun")
TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elastic_hvdrun_train.py")
DATASET = 56  # gen 0: 8 batches x 2 ranks x 2; gen 1: 3 x 3 x 2 (and batch 10 again in gen 2)
KILL_GENERATION, KILL_BATCH = 1, 11
GROW_AT_BATCH = 8  # the commit of generation 0 that hvdrun's announcement interrupts
JOB_TIMEOUT_S = 300
# What the script's rank 0 prints after its third commit in generation 0.
READY_LINE = "elastic-train: committed, ready to grow"


def discovery_script(directory, hosts_file):
    path = os.path.join(directory, "discover.sh")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\ncat '{hosts_file}'\n")
    os.chmod(path, stat.S_IRWXU)
    return path


def write_hosts(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def hvdrun_command(discover, extra=()):
    return [HVDRUN, "-np", "2", "--min-np", "1", "--max-np", "3",
            "--host-discovery-script", discover, *extra]


def events(out, generation, rank):
    with open(os.path.join(out, f"gen{generation}.rank{rank}.log")) as f:
        return [json.loads(line) for line in f]


def of(out, generation, rank, kind):
    return [e for e in events(out, generation, rank) if e["event"] == kind]


def ranks_of(out, generation):
    return sorted(int(m.group(1)) for name in os.listdir(out)
                  if (m := re.fullmatch(rf"gen{generation}\.rank(\d+)\.log", name)))


def run_growing(command, hosts, grown_text):
    """Runs hvdrun; when a rank prints READY_LINE, writes grown_text into the hosts
    file. Returns the completed process."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    stdout = []

    def relay_stdout():
        for line in process.stdout:
            stdout.append(line)
            if READY_LINE in line:
                write_hosts(hosts, grown_text)

    reader = threading.Thread(target=relay_stdout, daemon=True)
    reader.start()
    try:
        stderr = process.stderr.read()
        process.wait(timeout=JOB_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join()
    return subprocess.CompletedProcess(command, process.returncode, "".join(stdout), stderr)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Runs the job; returns (out dir, completed process)."""
    root = tmp_path_factory.mktemp("elastic-hvdrun")
    out = root / "out"
    out.mkdir()
    hosts = str(root / "hosts")
    write_hosts(hosts, "localhost:2\n")
    command = hvdrun_command(discovery_script(str(root), hosts),
                             ["--blacklist-cooldown-range", "1", "2"])
    command += [sys.executable, TRAIN, str(out), str(DATASET), str(KILL_GENERATION),
                str(KILL_BATCH)]
    result = run_growing(command, hosts, "localhost:3\n")
    sys.stderr.write(result.stderr)
    return str(out), result


def test_the_job_finishes_with_status_0_after_three_generations(job):
    out, result = job
    assert result.returncode == 0, result.stderr
    lines = [l for l in result.stderr.splitlines() if l.startswith("hvdrun: elastic:")]
    expected = [
        r"generation 0 on 1 host \(localhost:2\), 2 ranks$",
        r"hosts changed \(now localhost:3\): telling the ranks to move to a new generation$",
        r"generation 0 ended: its ranks left for a change of hosts \(status 75\)$",
        r"generation 1 on 1 host \(localhost:3\), 3 ranks, after a change of hosts$",
        r"generation 1 failed: rank 1 .*exited with status 1; host localhost is left out for "
        r"[0-9.]+ s$",
        r"generation 2 on 1 host \(localhost:3\), 3 ranks, after host localhost failed "
        r"\(rank 1 exited with status 1\)$",
        r"generation 2 finished: every rank returned 0; the job is done$",
    ]
    seen = iter(lines)
    for pattern in expected:
        assert any(re.search(pattern, l) for l in seen), (pattern, lines)
    assert ranks_of(out, 0) == [0, 1]
    assert ranks_of(out, 1) == [0, 1, 2]
    assert ranks_of(out, 2) == [0, 1, 2]


def test_every_rank_is_interrupted_at_the_same_commit(job):
    out, _ = job
    for rank in (0, 1):
        assert of(out, 0, rank, "commit")[-1]["batch"] == GROW_AT_BATCH
        assert of(out, 0, rank, "batch")[-1]["batch"] == GROW_AT_BATCH - 1
        assert of(out, 0, rank, "done") == []


def test_generation_1_continues_from_the_interrupted_state(job):
    out, _ = job
    interrupted = of(out, 0, 0, "commit")[-1]
    assert of(out, 0, 1, "commit")[-1]["digest"] == interrupted["digest"]
    for rank in (0, 1, 2):
        sync, = of(out, 1, rank, "sync")
        assert (sync["batch"], sync["digest"], sync["size"]) == (
            GROW_AT_BATCH, interrupted["digest"], 3)
        assert of(out, 1, rank, "batch")[0]["batch"] == GROW_AT_BATCH


def last_commit_before_the_failure(out):
    commits = of(out, KILL_GENERATION, 0, "commit")
    assert commits, "generation 1 committed nothing before the failure"
    return commits[-1]


def test_generation_2_restores_the_last_commit_bit_for_bit(job):
    out, _ = job
    commit = last_commit_before_the_failure(out)
    assert commit["batch"] < KILL_BATCH
    for rank in (0, 1, 2):
        sync, = of(out, 2, rank, "sync")
        assert (sync["batch"], sync["digest"]) == (commit["batch"], commit["digest"])
        assert of(out, 2, rank, "done"), f"generation 2's rank {rank} did not finish"
    assert len({of(out, 2, r, "done")[0]["digest"] for r in (0, 1, 2)}) == 1


def test_every_sample_is_trained_on_once_but_those_after_the_last_commit(job):
    out, _ = job
    redo_from = last_commit_before_the_failure(out)["batch"]
    counts = [0] * DATASET
    redone = []
    for generation in (0, 1, 2):
        for rank in ranks_of(out, generation):
            for e in of(out, generation, rank, "batch"):
                if generation == KILL_GENERATION and e["batch"] >= redo_from:
                    redone += e["samples"]
                    continue
                for i in e["samples"]:
                    counts[i] += 1
    assert counts == [1] * DATASET
    # Batch 10 ran on every rank of generation 1 before rank 1 ended itself at 11.
    assert len(redone) == 3 * 2


HOROVOD_RUN_ELASTIC_SCRIPT = '''
import sys

import horovod


def train():
    import horovod.torch as hvd
    hvd.init()
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, steps=0)

    @hvd.elastic.run
    def steps(state):
        for state.steps in range(state.steps, 3):
            state.commit()
        return hvd.rank(), hvd.size(), state.steps

    return steps(state)


if __name__ == "__main__":
    print(horovod.run(train, num_proc=2, min_num_proc=1, max_num_proc=2,
                      host_discovery_script=sys.argv[1]))
    try:
        horovod.run(train, num_proc=2, min_num_proc=1)
    except ValueError as e:
        print("refused:", "host_discovery_script" in str(e))
'''


def test_horovod_run_launches_an_elastic_job_through_hvdrun(tmp_path):
    hosts = str(tmp_path / "hosts")
    write_hosts(hosts, "localhost:2\n")
    script = tmp_path / "launch.py"
    script.write_text(HOROVOD_RUN_ELASTIC_SCRIPT)
    result = subprocess.run([sys.executable, str(script), discovery_script(str(tmp_path), hosts)],
                            capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert "hvdrun: elastic: generation 0 on 1 host (localhost:2), 2 ranks" in result.stderr
    lines = [l for l in result.stdout.splitlines() if l.startswith(("[(", "refused"))]
    # The first min_num_proc results, as Horovod returns.
    assert lines == ["[(0, 2, 2)]", "refused: True"], result.stdout
