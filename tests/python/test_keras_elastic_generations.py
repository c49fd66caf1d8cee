"""A Keras job's elastic generations, driven as hvdrun drives them (see
test_elastic_generations.py, whose stand-in for hvdrun this shares), with
keras_elastic_worker.py: model.fit with a KerasState and Horovod's callbacks.

Generation 0 (2 ranks, one node) commits every second batch and at the epoch's end,
and loses rank 1 after its fourth commit. Generation 1 (2 ranks: a new host, then the
old node's) restores commit 4 on every rank, the model's weights and the optimizer's
slots and step count bit for bit, broadcast by rank 1 (the lowest rank whose node
holds it), after the reset callbacks; hvdrun's HOSTS_UPDATED makes every rank raise
HostsUpdatedInterrupt at the same commit, and the generation ends with status 75.

This process itself is no MPI rank: meson runs it with plain pytest (the TensorFlow
venv's), and HVD_TEST_MPIEXEC names the launcher.
"""
import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("keras")

from elastic_driver_stand_in import TOKEN, Listener, events, first, launch, output  # noqa: E402

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_elastic_worker.py")
UPDATE = "HOSTS_UPDATED 1765132800.25 1\n"  # a host was removed


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    root = tmp_path_factory.mktemp("keras-elastic")
    out = root / "out"
    out.mkdir()
    node_a, node_b = str(root / "node-a"), str(root / "node-b")
    listeners = [Listener(f"HELLO {TOKEN} 0\n"), Listener(f"HELLO {TOKEN} 1\n", [UPDATE])]
    try:
        results = [launch(WORKER, out, 0, [node_b, node_b], listeners[0],
                          ["--crash-rank", "1", "--crash-at-step", "6"])]
        results.append(launch(WORKER, out, 1, [node_a, node_b], listeners[1],
                              ["--interrupt-at-commit", "5"]))
    finally:
        for listener in listeners:
            listener.close()
    return dict(out=out, results=results, listeners=listeners)


def arrays(out, name):
    with np.load(os.path.join(out, name)) as saved:
        return [saved[f"v{i}"] for i in range(len(saved.files))]


def assert_same_bits(expected, actual, where):
    assert len(expected) == len(actual), where
    for i, (a, b) in enumerate(zip(expected, actual)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{where}: variable {i}"
        assert a.tobytes() == b.tobytes(), f"{where}: variable {i}'s bytes differ"


def commits(out, generation, rank):
    return [(e["number"], e["batch"], e["epoch"], e["steps"])
            for e in events(out, generation, rank) if e["event"] == "commit"]


def test_generation_0_commits_at_horovods_batches_then_loses_a_rank(job):
    result = job["results"][0]
    assert result.returncode not in (0, 75, 76), output(result)
    # (commit, state.batch, state.epoch, optimizer steps): every second batch and the
    # epoch's end, the batch count carried over the epoch's end as Horovod's is.
    expected = [(1, 1, 0, 2), (2, 3, 0, 4), (3, 0, 1, 4), (4, 1, 1, 6)]
    for rank in range(2):
        assert commits(job["out"], 0, rank) == expected
        assert first(job["out"], 0, rank, "synced")["restored_from"] is None
    for number in range(1, 5):
        assert_same_bits(arrays(job["out"], f"gen0.commit{number}.rank0.npz"),
                         arrays(job["out"], f"gen0.commit{number}.rank1.npz"),
                         f"commit {number} on ranks 0 and 1")
    assert job["listeners"][0].hellos == [f"HELLO {TOKEN} 0\n"]


def test_generation_1_restores_the_last_commit_bit_for_bit(job):
    result = job["results"][1]
    assert result.returncode == 75, output(result)
    last_commit = arrays(job["out"], "gen0.commit4.rank0.npz")
    for rank in range(2):
        kinds = [e["event"] for e in events(job["out"], 1, rank)]
        assert kinds.index("reset") < kinds.index("synced"), kinds
        synced = first(job["out"], 1, rank, "synced")
        # Rank 0 is the new host: rank 1, of the old node, broadcast commit 4.
        assert synced["restored_from"] == [4, 1]
        assert (synced["batch"], synced["epoch"], synced["steps"]) == (1, 1, 6)
        assert_same_bits(last_commit, arrays(job["out"], f"gen1.synced.rank{rank}.npz"),
                         f"generation 1's rank {rank} after the sync")


def test_hosts_updated_interrupts_every_rank_at_the_same_commit(job):
    assert job["listeners"][1].hellos == [f"HELLO {TOKEN} 1\n"]
    for rank in range(2):
        # fit starts the commit count afresh: the first commit is after two batches.
        assert commits(job["out"], 1, rank) == [(5, 1, 1, 8)]
        assert first(job["out"], 1, rank, "interrupted")["commit"] == 5
    assert first(job["out"], 1, 0, "interrupted")["updates"] == [[1765132800.25, 1]]
