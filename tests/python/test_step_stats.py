"""Step accounting from Python: hvd.step_stats(), hvd.mark_step(), the optimizer's
marks, and the keys of the HVD_SUMMARY_FILE JSON (a fixed interface: hvdrun
--scaling reads it). Runs its own init/shutdown cycles: the summary is written at
shutdown and the environment is read at init."""
import json
import os
import shutil
import tempfile
import time

import numpy as np
import pytest

import hvd

SUMMARY_KEYS = {
    "ranks", "steps", "step_seconds", "step_seconds_max_rank", "exposed_wait_seconds",
    "exposed_share", "exposed_share_max_rank", "negotiate_seconds", "copy_seconds",
    "transfer_seconds", "bytes_per_step", "bus_bandwidth", "reference_bus_bandwidth",
    "top_tensors", "per_rank",
}
PER_RANK_KEYS = {"rank", "steps", "step_seconds", "exposed_wait_seconds"}
STEPS = 8
COUNT = 1000


def _steps(mark):
    for _ in range(STEPS):
        time.sleep(0.002)
        hvd.allreduce(np.ones(COUNT, dtype=np.float32), op=hvd.Sum, name="py.grad")
        if mark:
            hvd.mark_step()


def test_before_init_is_not_initialized():
    if hvd.is_initialized():
        pytest.skip("initialized by an earlier test")
    with pytest.raises(hvd.NotInitializedError):
        hvd.mark_step()


def test_step_stats_with_marks():
    hvd.init()
    try:
        _steps(mark=True)
        stats = hvd.step_stats()
        assert SUMMARY_KEYS <= set(stats)
        assert stats["enabled"] is True
        # The first mark starts step 1, which is the warm-up.
        assert stats["steps"] == STEPS - 1 - stats["warmup_steps"]
        assert stats["bytes_per_step"] == COUNT * 4
        assert stats["step_seconds"] > 0
        assert 0 <= stats["exposed_share"] <= 1.5
        assert stats["per_rank"][0]["rank"] == hvd.rank()
        assert PER_RANK_KEYS <= set(stats["per_rank"][0])
        for entry in stats["top_tensors"]:
            assert entry["name"] == "py.grad" and entry["wait_seconds"] > 0
        assert stats["reference_bus_bandwidth"] == 0
    finally:
        hvd.shutdown()
    # After shutdown: the run that ended.
    assert hvd.step_stats()["steps"] == stats["steps"]


def test_optimizer_marks_steps():
    torch = pytest.importorskip("torch")
    import hvd.torch as hvd_torch
    hvd.init()
    try:
        model = torch.nn.Linear(4, 2)
        opt = hvd_torch.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                             named_parameters=model.named_parameters())
        for _ in range(STEPS):
            opt.zero_grad()
            model(torch.ones(3, 4)).sum().backward()
            opt.step()
        stats = hvd_torch.step_stats()
        assert stats["steps"] == STEPS - 1 - stats["warmup_steps"]
        # One rank: the optimizer has nothing to reduce.
        assert stats["bytes_per_step"] == ((4 * 2 + 2) * 4 if hvd.size() > 1 else 0)
    finally:
        hvd.shutdown()


def test_summary_file_json():
    # One path for every rank: rank 0 chooses it (only rank 0 writes the file).
    hvd.init()
    path = hvd.broadcast_object(
        os.path.join(tempfile.mkdtemp(prefix="hvd-summary-"), "summary.json")
        if hvd.rank() == 0 else None, root_rank=0, name="summary.path")
    hvd.shutdown()
    os.environ["HVD_SUMMARY_FILE"] = path
    try:
        hvd.init()
        size = hvd.size()
        rank = hvd.rank()
        _steps(mark=False)
        hvd.shutdown()
    finally:
        del os.environ["HVD_SUMMARY_FILE"]
    if rank != 0:
        return
    with open(path) as f:
        doc = json.load(f)
    shutil.rmtree(os.path.dirname(path))
    assert SUMMARY_KEYS <= set(doc)
    assert doc["ranks"] == size
    # Detection: the first "py.grad" starts step 1; the last step never ends.
    assert doc["steps"] == STEPS - 1 - doc["warmup_steps"]
    assert doc["bytes_per_step"] == COUNT * 4
    assert [r["rank"] for r in doc["per_rank"]] == list(range(size))
    for r in doc["per_rank"]:
        assert PER_RANK_KEYS <= set(r)
        assert r["steps"] == doc["steps"]
    assert doc["step_seconds_max_rank"] >= doc["step_seconds"]
    assert doc["exposed_share_max_rank"] >= doc["exposed_share"]
    for entry in doc["top_tensors"]:
        assert set(entry) == {"name", "wait_seconds"}
    if size > 1:
        assert doc["bus_bandwidth"] > 0 and doc["reference_bus_bandwidth"] > 0
    # The reference stays readable after shutdown on every rank that measured it.
    assert hvd.step_stats()["reference_bus_bandwidth"] == pytest.approx(
        doc["per_rank"][0]["reference_bus_bandwidth"], rel=1e-6)


def test_summary_late_rank_is_waiting_not_transfer():
    # A deliberate skew: the last rank sleeps before each submit. The others' wait for
    # it is their exposed wait (and, inside a transfer, peer wait), not transfer time,
    # and every rank's row covers the same steps.
    late_s = 0.05
    hvd.init()
    path = hvd.broadcast_object(
        os.path.join(tempfile.mkdtemp(prefix="hvd-summary-"), "summary.json")
        if hvd.rank() == 0 else None, root_rank=0, name="summary.path")
    hvd.shutdown()
    os.environ["HVD_SUMMARY_FILE"] = path
    try:
        hvd.init()
        size = hvd.size()
        rank = hvd.rank()
        for _ in range(STEPS):
            if rank == size - 1:
                time.sleep(late_s)
            hvd.allreduce(np.ones(COUNT, dtype=np.float32), op=hvd.Sum, name="py.late")
            hvd.mark_step()
        hvd.shutdown()
    finally:
        del os.environ["HVD_SUMMARY_FILE"]
    if rank != 0:
        return
    with open(path) as f:
        doc = json.load(f)
    shutil.rmtree(os.path.dirname(path))
    assert doc["steps"] == STEPS - 1 - doc["warmup_steps"]
    assert {r["steps"] for r in doc["per_rank"]} == {doc["steps"]}
    for r in doc["per_rank"]:
        assert r["steps_seen"] >= r["steps"] and r["peer_wait_seconds"] >= 0
    if size == 1:
        return
    # Generous margins: the skew is 50 ms a step, a 4 KB transfer on one machine far less.
    early = doc["per_rank"][0]
    waited = early["exposed_wait_seconds"] + early["peer_wait_seconds"]
    assert waited > early["transfer_seconds"]
    assert waited > late_s / 2 > early["transfer_seconds"]
