"""One program for libhvd and for real Horovod: `import horovod.torch as hvd`, torch CPU
tensors, the cases of hvd-bench's workload mode, timed the same way whichever library
answers the import (tools/hvd-bench/vs_horovod.sh chooses it through the environment).

Cases (float32, reduced in place with Horovod's default op, average):
  resnet50, bert_base  the gradient sets of tools/hvd-bench/workloads
  many_small           1000 tensors of 1024 floats (4 KB)
  latency              one lone tensor of 1024 floats
  optimizer            a training step through hvd.DistributedOptimizer (SGD at lr 0)
                       of 1000 parameters of 1024 floats: zero_grad(), a backward pass
                       through one concatenation of them times a constant, step(); the
                       optimizer's hooks start each gradient's allreduce as it is ready
One step (but for optimizer): every tensor submitted with allreduce_async_ in reverse
order, each under its own name (the same names every step, as a training loop's), then
all synchronized, as a backward pass and an optimizer do. Each timed step starts after a
library barrier (an allreduce of one float, not timed); a step's time is that of the
slowest rank. The latency case runs --latency-inner allreduces back to back per step.

With mpi4py importable (--mpi4py-path adds a folder that holds it), the raw-MPI
reference is measured (but for optimizer, whose step also computes) in the same
process on the same ranks, before the library
starts (mpi4py then starts MPI, and the library uses it): the step's bytes packed
in one numpy buffer (packing not timed), reduced in place with MPI_Allreduce in one
call and in consecutive 1, 4 and 16 MiB chunks; the fastest is the limit.

With --interleave, the reference is measured again after the library starts,
interleaved with its steps: before each library step, one step of the limit's
strategy on a communicator of its own. On a machine whose speed swings within
seconds (the network lab's 100 MB allreduce took 37 ms and 89 ms in one process),
the ratio of a step to its neighbouring reference says how close to the limit the
library is in that moment, where a limit measured before the library started may
come from a faster or slower spell. Real Horovod's background thread keeps cycling
(it calls MPI every cycle time) while the reference runs beside it, which slows the
reference severalfold on the lab, so Horovod's interleaved ratio flatters it;
libhvd's idle thread sleeps. Whether the reference between steps changes Horovod's
own step times the lab's noise did not settle: so it is not the default, which
measures what a training loop does.

Rank 0 prints one JSON line per case:
  {"library": "horovod"|"libhvd", "case": .., "ranks": .., "tensors": .., "bytes": ..,
   "median_ms": .., "min_ms": .., "max_ms": .., "limit_ms": {..}, "limit_strategy": ..,
   "interleaved_limit_ms": {..}, "vs_interleaved_limit": .., "wrong": 0}
"limit_ms" is absent when mpi4py was not importable, the interleaved keys also
without --interleave; "vs_interleaved_limit" is the median over steps of the
interleaved reference's time over the library's (the slowest rank's of each); times
of the latency case are per allreduce.
"""
import argparse
import json
import os
import statistics
import sys
import time

CASES = ("resnet50", "bert_base", "many_small", "latency", "optimizer")
WORKLOAD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")
CHUNKS_MIB = (1, 4, 16)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES),
                   help="comma-separated, of: " + ", ".join(CASES) + " (default: all)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per case (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--latency-inner", type=int, default=20,
                   help="lone allreduces per step of the latency case (default 20)")
    p.add_argument("--workload-dir", default=WORKLOAD_DIR,
                   help="where <case>_sizes.txt are (default: hvd-bench's workloads)")
    p.add_argument("--many-small", default="1000x1024", metavar="NxCOUNT",
                   help="tensors x floats of the many_small case (default 1000x1024)")
    p.add_argument("--no-limit", action="store_true", help="skip the raw-MPI reference")
    p.add_argument("--interleave", action="store_true",
                   help="measure the reference again before each library step")
    p.add_argument("--mpi4py-path", default="",
                   help="a folder to put on sys.path for mpi4py (the reference only)")
    p.add_argument("--dry-run", action="store_true",
                   help="check the arguments and workload files, print the plan, stop")
    args = p.parse_args(argv)
    args.cases = [c for c in args.cases.split(",") if c]
    for c in args.cases:
        if c not in CASES:
            p.error(f"unknown case {c!r}: choose from {', '.join(CASES)}")
    if args.steps < 1 or args.warmup < 0 or args.latency_inner < 1:
        p.error("--steps and --latency-inner must be >= 1, --warmup >= 0")
    try:
        n, count = (int(x) for x in args.many_small.lower().split("x"))
        if n < 1 or count < 1:
            raise ValueError
        args.many_small = (n, count)
    except ValueError:
        p.error(f"--many-small {args.many_small!r}: expected NxCOUNT, e.g. 1000x1024")
    return args


def load_sizes(path):
    sizes = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            value = int(text)
            if value <= 0:
                raise ValueError(f"{path}:{number}: expected a positive element count")
            sizes.append(value)
    if not sizes:
        raise ValueError(f"{path} lists no tensors")
    return sizes


def case_sizes(case, args):
    if case in ("many_small", "optimizer"):
        n, count = args.many_small
        return [count] * n
    if case == "latency":
        return [1024]
    return load_sizes(os.path.join(args.workload_dir, f"{case}_sizes.txt"))


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


class Bench:
    def __init__(self, hvd, torch, library):
        self.hvd, self.torch, self.library = hvd, torch, library
        self.rank, self.size = hvd.rank(), hvd.size()
        self.barrier_tensor = torch.zeros(1)
        # Inputs differ per rank; the average is then (size + 1) / 2 everywhere and stays
        # so step after step, which every step's result is checked against.
        self.expected = (self.size + 1) / 2.0

    def barrier(self):
        self.hvd.allreduce_(self.barrier_tensor, name="vs_horovod.barrier")

    def slowest(self, times):
        """Per step, the slowest rank's time (Max over ranks, through the library)."""
        t = self.torch.tensor(times, dtype=self.torch.float64)
        return self.hvd.allreduce(t, op=self.hvd.Max, name="vs_horovod.times").tolist()

    def step(self, tensors, names, inner):
        hvd = self.hvd
        for _ in range(inner):
            handles = [hvd.allreduce_async_(tensors[i], name=names[i])
                       for i in range(len(tensors) - 1, -1, -1)]
            for h in handles:
                hvd.synchronize(h)

    def run_optimizer_case(self, sizes, args):
        """Step times of a training step through DistributedOptimizer; every
        gradient must come out as the average of the ranks' constants."""
        torch, hvd = self.torch, self.hvd
        params = [torch.nn.Parameter(torch.zeros(n)) for n in sizes]
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(params, lr=0.0),
            named_parameters=[(f"vs_horovod.optimizer.{i}", p) for i, p in enumerate(params)])
        scale = torch.full((sum(sizes),), float(self.rank + 1))
        wrong = 0
        times = []
        for k in range(args.warmup + args.steps):
            self.barrier()
            start = time.perf_counter()
            opt.zero_grad()
            (torch.cat(params) * scale).sum().backward()
            opt.step()
            if k >= args.warmup:
                times.append((time.perf_counter() - start) * 1e3)
            wrong += sum(int((p.grad != self.expected).sum()) for p in params)
        return self.slowest(times), wrong, []

    def run_case(self, case, sizes, args, reference=None):
        """The library's step times (the slowest rank's) and wrong elements; with a
        reference (a function of no arguments that runs one raw-MPI step and returns
        its time in ms), also the reference's time before each library step."""
        torch = self.torch
        tensors = [torch.full((n,), float(self.rank + 1)) for n in sizes]
        names = [f"vs_horovod.{case}.{i}" for i in range(len(sizes))]
        inner = args.latency_inner if case == "latency" else 1
        wrong = 0
        times = []
        ref_times = []
        for k in range(args.warmup + args.steps):
            if reference is not None:
                ref_ms = reference()
                if k >= args.warmup:
                    ref_times.append(ref_ms)
            self.barrier()
            start = time.perf_counter()
            self.step(tensors, names, inner)
            elapsed = (time.perf_counter() - start) / inner
            if k >= args.warmup:
                times.append(elapsed * 1e3)
            wrong += sum(int((t != self.expected).sum()) for t in tensors)
            if wrong:
                for t in tensors:  # go on with right inputs, the count is kept
                    t.fill_(self.expected)
        return self.slowest(times), wrong, (self.slowest(ref_times) if ref_times else [])


class RawMPI:
    """MPI_Allreduce through mpi4py on one packed buffer: the reference."""

    def __init__(self, mpi4py_path):
        if mpi4py_path:
            sys.path.insert(0, mpi4py_path)
        import mpi4py
        # mpi4py starts MPI (MPI_THREAD_MULTIPLE, as both libraries want it), the library
        # then finds it started and leaves its end to mpi4py, after the library's.
        mpi4py.rc.thread_level = "multiple"
        from mpi4py import MPI
        import numpy
        self.MPI, self.np, self.comm = MPI, numpy, MPI.COMM_WORLD
        self.version = MPI.Get_library_version().splitlines()[0].strip()

    def strategies(self, nbytes):
        out = [("packed", None)]
        for mib in CHUNKS_MIB:
            if mib * (1 << 20) < nbytes:
                out.append((f"packed-chunks-{mib}MiB", mib * (1 << 20) // 4))
        return out

    def step_ms(self, buf, chunk, inner, comm=None):
        """One reference step on buf (this rank's time, ms); buf is refilled after."""
        MPI = self.MPI
        comm = comm or self.comm
        total = buf.size
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(inner):
            if chunk is None:
                comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            else:
                for off in range(0, total, chunk):
                    comm.Allreduce(MPI.IN_PLACE, buf[off:off + chunk], op=MPI.SUM)
        elapsed = (time.perf_counter() - start) / inner
        buf.fill(float(comm.Get_rank() + 1))  # not timed: sums must not overflow
        return elapsed * 1e3

    def run_case(self, sizes, args, inner):
        """(strategy name, summary, chunk) of the fastest strategy."""
        MPI, np, comm = self.MPI, self.np, self.comm
        buf = np.full(sum(sizes), float(comm.Get_rank() + 1), dtype=np.float32)
        best = None
        for name, chunk in self.strategies(buf.size * 4):
            times = [self.step_ms(buf, chunk, inner) for _ in range(args.warmup + args.steps)]
            slowest = np.array(times[args.warmup:])
            comm.Allreduce(MPI.IN_PLACE, slowest, op=MPI.MAX)
            s = summary(slowest.tolist())
            if best is None or s["median"] < best[1]["median"]:
                best = (name, s, chunk)
        return best

    def interleaved(self, sizes, chunk, inner):
        """A function running one step of a strategy, for Bench.run_case, on a
        communicator of its own (the library's collectives may share the world's)."""
        comm = self.comm.Dup()
        buf = self.np.full(sum(sizes), float(comm.Get_rank() + 1), dtype=self.np.float32)
        return lambda: self.step_ms(buf, chunk, inner, comm)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    plan = {c: case_sizes(c, args) for c in args.cases}
    if args.dry_run:
        for c, sizes in plan.items():
            print(json.dumps({"case": c, "tensors": len(sizes), "bytes": 4 * sum(sizes)}))
        return 0

    # The reference first, before the library starts: a library's background thread
    # (Horovod's wakes every cycle and calls MPI) would otherwise share MPI and the
    # cores with it.
    limits = {}
    raw_note = None
    if not args.no_limit:
        try:
            raw = RawMPI(args.mpi4py_path)
        except Exception as e:  # noqa: BLE001 - any failure: no reference, said so
            raw = None
            raw_note = f"no raw-MPI reference ({type(e).__name__}: {e})"
        if raw is not None:
            for case, sizes in plan.items():
                if case == "optimizer":
                    continue  # its step computes too: no raw-MPI limit of its own
                inner = args.latency_inner if case == "latency" else 1
                limits[case] = raw.run_case(sizes, args, inner)

    import torch
    import horovod
    import horovod.torch as hvd
    library = "libhvd" if getattr(horovod, "backend", "") == "libhvd" else "horovod"
    torch.set_num_threads(1)
    hvd.init()
    bench = Bench(hvd, torch, library)
    if raw_note and bench.rank == 0:
        print(f"vs_horovod_driver: {raw_note}", file=sys.stderr)
    status = 0
    for case, sizes in plan.items():
        reference = None
        if case in limits and args.interleave:
            inner = args.latency_inner if case == "latency" else 1
            reference = raw.interleaved(sizes, limits[case][2], inner)
        if case == "optimizer":
            times, wrong, ref_times = bench.run_optimizer_case(sizes, args)
        else:
            times, wrong, ref_times = bench.run_case(case, sizes, args, reference)
        total_wrong = int(hvd.allreduce(torch.tensor([wrong], dtype=torch.int64),
                                        op=hvd.Sum, name=f"vs_horovod.wrong.{case}").item())
        row = {"library": library, "case": case, "ranks": bench.size,
               "tensors": len(sizes), "bytes": 4 * sum(sizes)}
        s = summary(times)
        row.update(median_ms=s["median"], min_ms=s["min"], max_ms=s["max"])
        if case in limits:
            strategy, limit, _ = limits[case]
            row.update(limit_ms=limit, limit_strategy=strategy, mpi=raw.version)
        if ref_times:
            row.update(interleaved_limit_ms=summary(ref_times),
                       vs_interleaved_limit=statistics.median(
                           r / t for r, t in zip(ref_times, times)))
        row.update(wrong=total_wrong, version=getattr(horovod, "__version__", "?"))
        if total_wrong:
            status = 1
        if bench.rank == 0:
            print(json.dumps(row), flush=True)
    hvd.shutdown()
    return status


if __name__ == "__main__":
    sys.exit(main())
