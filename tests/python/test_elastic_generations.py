"""An elastic job's generations, driven as hvdrun drives them: each generation is an
mpiexec job of elastic_worker.py with the environment of docs/elastic.md (generation,
state directory, the notification listener's address and token), and a TCP server
here plays hvdrun's listener.

Generation 0 (2 ranks, one node) commits three batches and loses rank 1 before the
fourth. Generation 1 (3 ranks: a new host, then the old node's two) restores commit 3
bit for bit on every rank, broadcast by rank 1 (the lowest rank whose node holds it),
after the reset callbacks; hvdrun's HOSTS_UPDATED makes every rank raise
HostsUpdatedInterrupt at the same check, one batch after the last commit, and the
generation ends with status 75. Generation 2 (2 ranks on the new host) restores the
state of that check, not the older commit, ignores a corrupt and a torn state file,
finishes the epoch without repeating a sample and removes the node's state files.

This process itself is no MPI rank: meson runs it with plain pytest, and
HVD_TEST_MPIEXEC names the launcher.
"""
import os
import re
import socket
import stat

import pytest

torch = pytest.importorskip("torch")

from elastic_driver_stand_in import TOKEN, Listener, events, first, output  # noqa: E402
from elastic_driver_stand_in import launch as launch_worker  # noqa: E402

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elastic_worker.py")
UPDATE = "HOSTS_UPDATED 1765132800.25 2\n"  # hosts were added
DATASET = 26  # gen 0: 3 batches x 2 ranks x 2, gen 1: 1 x 3 x 2, gen 2: 2 x 2 x 2


def launch(out, generation, state_dirs, listener=None, worker_args=(), env=None):
    return launch_worker(WORKER, out, generation, state_dirs, listener, worker_args, env)


def load(out, name):
    return torch.load(os.path.join(out, name))


def assert_same_bits(a, b, where="state"):
    """Equal values; tensors of the same dtype, shape and bytes."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), where
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert a.numpy().tobytes() == b.numpy().tobytes(), f"{where}: the bytes differ"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same_bits(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_bits(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def state_files(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith("state."))


def plant_damaged_files(directory):
    """state.7: a header for commit 999 over bytes that do not match its checksum;
    state.6: state.0 renumbered 500 and cut short, as a write killed half way."""
    with open(os.path.join(directory, "state.7"), "wb") as f:
        f.write(b"HVDSTATE1 999 5 " + b"0" * 64 + b"\nhello")
    with open(os.path.join(directory, "state.0"), "rb") as f:
        good = f.read()
    header, payload = good.split(b"\n", 1)
    header = re.sub(rb"^HVDSTATE1 \d+", b"HVDSTATE1 500", header)
    with open(os.path.join(directory, "state.6"), "wb") as f:
        f.write(header + b"\n" + payload[:len(payload) // 2])


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Runs the three generations; returns (out dir, node dirs, results, listeners)."""
    root = tmp_path_factory.mktemp("elastic")
    out = root / "out"
    out.mkdir()
    node_b = str(root / "node-b")  # generations 0 and 1
    node_a = str(root / "node-a")  # new in generation 1, alone in generation 2
    listeners = [Listener(f"HELLO {TOKEN} 0\n"), Listener(f"HELLO {TOKEN} 1\n", [UPDATE]),
                 Listener(f"HELLO {TOKEN} 2\n")]
    results = []
    try:
        results.append(launch(out, 0, [node_b, node_b], listeners[0],
                              ["--dataset", str(DATASET), "--crash-rank", "1",
                               "--crash-at-batch", "4"]))
        results.append(launch(out, 1, [node_a, node_b, node_b], listeners[1],
                              ["--dataset", str(DATASET), "--interrupt-at-batch", "4"]))
        # Generation 2 depends on what generation 1 left: say why when it left nothing.
        assert results[1].returncode == 75, output(results[1])
        a_mode = stat.S_IMODE(os.stat(node_a).st_mode)
        plant_damaged_files(node_a)
        results.append(launch(out, 2, [node_a, node_a], listeners[2],
                              ["--dataset", str(DATASET)]))
    finally:
        for listener in listeners:
            listener.close()
    return dict(out=out, node_a=node_a, node_b=node_b, results=results,
                listeners=listeners, a_mode=a_mode)


def test_generation_0_commits_then_loses_a_rank(job):
    result = job["results"][0]
    assert result.returncode not in (0, 75, 76), output(result)
    assert [e["batch"] for e in events(job["out"], 0, 0) if e["event"] == "batch"] == [1, 2, 3]
    assert first(job["out"], 0, 0, "synced")["restored_from"] is None
    assert not any(e["event"] == "reset" for e in events(job["out"], 0, 0))
    assert job["listeners"][0].hellos == [f"HELLO {TOKEN} 0\n"]


def test_generation_1_restores_the_last_commit_bit_for_bit(job):
    result = job["results"][1]
    assert result.returncode == 75, output(result)
    last_commit = load(job["out"], "commit3.pt")
    for rank in range(3):
        log = events(job["out"], 1, rank)
        kinds = [e["event"] for e in log]
        assert kinds.index("reset") < kinds.index("synced"), kinds
        assert first(job["out"], 1, rank, "reset") == {"event": "reset", "synced": False,
                                                       "size": 3}
        # Rank 0 is the new host: rank 1, the lowest of the old node, broadcast it.
        assert first(job["out"], 1, rank, "synced")["restored_from"] == [3, 1]
        assert_same_bits(last_commit, load(job["out"], f"gen1.synced.rank{rank}.pt"))
    assert stat.S_IMODE(os.stat(job["node_a"]).st_mode) == 0o700 == job["a_mode"]


def test_generation_1_publishes_horovods_variables(job):
    for rank in range(3):
        environment = first(job["out"], 1, rank, "synced")["environment"]
        assert environment["HOROVOD_RANK"] == str(rank)
        assert environment["HOROVOD_SIZE"] == "3"
        assert environment["HOROVOD_LOCAL_RANK"] is not None
        assert environment["HOROVOD_CROSS_SIZE"] is not None
        assert environment["HOROVOD_HOSTNAME"] == socket.gethostname()
        # A stalled collective ends a generation instead of hanging it.
        assert environment["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"] == "600"


def test_hosts_updated_interrupts_every_rank_at_the_same_check(job):
    assert job["listeners"][1].hellos == [f"HELLO {TOKEN} 1\n"]
    for rank in range(3):
        interrupted = first(job["out"], 1, rank, "interrupted")
        assert interrupted["batch"] == 4 and interrupted["skip_sync"] is False
    assert first(job["out"], 1, 0, "interrupted")["updates"] == [[1765132800.25, 2]]


def test_generation_2_starts_from_the_interrupted_state_without_rollback(job):
    result = job["results"][2]
    assert result.returncode == 0, output(result)
    at_interrupt = load(job["out"], "gen1.interrupted.rank0.pt")
    last_commit = load(job["out"], "commit3.pt")
    assert at_interrupt["batch"] == 4 and last_commit["batch"] == 3
    assert not torch.equal(at_interrupt["model"]["weight"], last_commit["model"]["weight"])
    for rank in range(2):
        # The interrupt persisted commit 4; the damaged files' 999 and 500 are not loaded.
        assert first(job["out"], 2, rank, "synced")["restored_from"] == [4, 0]
        assert_same_bits(at_interrupt, load(job["out"], f"gen2.synced.rank{rank}.pt"))
        assert first(job["out"], 2, rank, "returned")["result"] == "done"
    assert "state.7: the checksum of commit 999 does not match" in result.stderr
    assert "state.6: commit 500 should hold" in result.stderr
    assert state_files(job["node_a"]) == []  # the job is done: the node's files go


def test_elastic_sampler_resumes_without_repeating_samples(job):
    processed = []
    for generation, ranks, done in ((0, 2, 3), (1, 3, 4), (2, 2, 99)):
        for rank in range(ranks):
            for event in events(job["out"], generation, rank):
                # Generation 0's batches after its last commit were lost with it.
                if event["event"] == "batch" and event["batch"] <= done:
                    processed += event["indices"]
    assert sorted(processed) == list(range(DATASET))


def test_a_commit_on_one_rank_only_fails_every_rank(tmp_path):
    node = str(tmp_path / "node")
    result = launch(tmp_path, 0, [node, node], worker_args=["--lonely-commit"],
                    env={"HOROVOD_STALL_CHECK_TIME_SECONDS": "1",
                         "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "2"})
    assert result.returncode == 76, output(result)
    assert "a collective failed" in result.stderr
    assert "hvd.elastic.host_updates.0" in result.stderr  # the stalled check names itself


def test_an_attribute_that_cannot_be_pickled_is_named_and_fails_the_peers(tmp_path):
    node = str(tmp_path / "node")
    result = launch(tmp_path, 0, [node, node], worker_args=["--unpicklable-on-rank", "1"])
    assert result.returncode == 0, output(result)
    failed = first(tmp_path, 0, 1, "commit-failed")
    assert failed["type"] == "TypeError" and "attribute 'note'" in failed["message"]
    peer = first(tmp_path, 0, 0, "commit-failed")
    assert peer["type"] == "MismatchError" and "attribute 'note'" in peer["message"]


def test_a_state_directory_of_another_user_is_refused_on_every_rank(tmp_path):
    if os.getuid() != 0:
        pytest.skip("making a directory of another user needs root")
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    result = launch(tmp_path, 0, [str(ours), str(theirs)])
    assert result.returncode != 0, output(result)
    assert f"the state directory {theirs} belongs to user id 65534" in result.stderr
    # Rank 0 does not wait for rank 1 in the state's synchronization: it is told why.
    assert "rank 1 cannot run the elastic job" in result.stderr
