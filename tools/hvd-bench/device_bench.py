#!/usr/bin/env python3
"""The device path's figures (BENCHMARKS.md, "On a GPU"), in one run per rank count:

  mpiexec -n 1 python3 tools/hvd-bench/device_bench.py [--workload resnet50] [--json F]

On each rank's GPU (local rank modulo the devices seen), for a workload's tensor set:
  d2d_copy_gbps     device-to-device copy of the packed set, bytes read + written / s
  torch_fused_ms    the copy floor: every tensor into one buffer and back, with torch
  hvd_ms            libhvd's grouped in-place allreduce of the set (median step)
  hvd_copy_share    of a libhvd step, the share step accounting gives to fusion copies
  fusion_copy_gbps  bytes copied in and out by libhvd's fusion / its copy seconds (with
                    peers: a rank alone copies nothing)
  nccl_packed_ms    NCCL on one pre-packed buffer through torch.distributed (the limit
                    of the device path), where every rank has a GPU of its own
  lone_4k_us        one 4 KB allreduce, median latency
Device tensors are pinned per local rank; ranks that share a GPU take the staged path
(HOROVOD_GPU_OPERATIONS=MPI), since NCCL refuses two ranks on one device.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

import hvd.torch as hvd

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", default="resnet50", help="resnet50 or bert_base")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", default=None, help="write rank 0's figures here")
    p.add_argument("--cpu", action="store_true", help="host tensors (to try the script)")
    return p.parse_args()


def load_sizes(workload):
    path = os.path.join(HERE, "workloads", f"{workload}_sizes.txt")
    with open(path) as f:
        return [int(line.split()[-1]) for line in f
                if line.strip() and not line.startswith("#")]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(fn, device, steps, warmup):
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def nccl_packed_ms(packed, device, steps, warmup):
    """NCCL called directly on the packed buffer; None where it cannot run."""
    if device.type != "cuda":
        return None
    if hvd.local_size() > torch.cuda.device_count():
        return None  # NCCL refuses two ranks on one GPU
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=hvd.rank(), world_size=hvd.size(),
                            device_id=device)
    try:
        return median_ms(lambda: dist.all_reduce(packed), device, steps, warmup)
    finally:
        dist.destroy_process_group()


def main():
    args = parse_args()
    hvd.init()
    if args.cpu or not torch.cuda.is_available():
        device = torch.device("cpu")
    else:
        device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)
    sizes = load_sizes(args.workload)
    tensors = [torch.ones(n, dtype=torch.float32, device=device) for n in sizes]
    total = sum(sizes)
    nbytes = total * 4
    packed = torch.ones(total, dtype=torch.float32, device=device)
    other = torch.empty_like(packed)
    views = list(torch.split(packed, sizes))

    copy_ms = median_ms(lambda: other.copy_(packed), device, args.steps, args.warmup)

    foreach_copy = getattr(torch, "_foreach_copy_", None)

    def torch_fused():
        torch.cat(tensors, out=packed)
        if foreach_copy is not None:  # one launch for every tensor, as libhvd's kernel
            foreach_copy(tensors, views)
        else:
            for t, v in zip(tensors, views):
                t.copy_(v)
    fused_ms = median_ms(torch_fused, device, args.steps, args.warmup)

    def hvd_step():
        hvd.grouped_allreduce_(tensors, op=hvd.Sum, name="grads")
        hvd.mark_step()
    hvd_ms = median_ms(hvd_step, device, args.steps, args.warmup)
    stats = hvd.step_stats()
    step = stats["step_seconds"] or 1e-30
    copy_s = stats["copy_seconds"]

    lone = torch.ones(1024, dtype=torch.float32, device=device)
    lone_us = 1e3 * median_ms(lambda: hvd.allreduce_(lone, op=hvd.Sum, name="lone"),
                              device, 200, 20)

    figures = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "ranks": hvd.size(), "local_size": hvd.local_size(),
        "gpu_operations": os.environ.get("HOROVOD_GPU_OPERATIONS", "default"),
        "workload": args.workload, "tensors": len(sizes), "bytes": nbytes,
        "d2d_copy_gbps": 2 * nbytes / (copy_ms * 1e-3) / 1e9,
        "torch_fused_ms": fused_ms,
        "hvd_ms": hvd_ms,
        "hvd_copy_share": copy_s / step,
        # Fusion copies the set in and out: 2 passes, each reading and writing it (with
        # peers; a rank alone reduces in place and copies nothing).
        "fusion_copy_gbps": (4 * nbytes / copy_s / 1e9) if copy_s > 0 and hvd.size() > 1
                            else None,
        "step_stats": {k: stats[k] for k in ("step_seconds", "negotiate_seconds",
                                             "copy_seconds", "transfer_seconds")},
        "lone_4k_us": lone_us,
    }
    nccl_ms = nccl_packed_ms(packed, device, args.steps, args.warmup)
    figures["nccl_packed_ms"] = nccl_ms
    figures["hvd_vs_nccl_packed"] = nccl_ms / hvd_ms if nccl_ms else None
    rank = hvd.rank()
    hvd.shutdown()
    if rank == 0:
        text = json.dumps(figures, indent=1)
        print(text)
        if args.json:
            with open(args.json, "w") as f:
                f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
