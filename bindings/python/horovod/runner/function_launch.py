"""horovod.run: runs a Python function on N processes and returns their results.

The function and its arguments are pickled into a temporary directory (with
cloudpickle when it is installed, so lambdas and closures travel too; otherwise with
pickle, which needs a module-level function), the job is started with libhvd's hvdrun
launcher (or mpiexec when hvdrun is not found), each rank runs
`python -m horovod.runner.run_task DIR`, and the results come back as a list ordered
by rank. An exception on any rank fails the whole call with that rank's traceback.
"""
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

try:
    import cloudpickle as _pickler
except ImportError:  # pickle handles module-level functions
    _pickler = pickle


def _hvdrun():
    return os.environ.get("HVD_HVDRUN") or shutil.which("hvdrun")


def _launcher(np, hosts):
    hvdrun = _hvdrun()
    if hvdrun:
        cmd = [hvdrun, "-np", str(np)]
        return cmd + (["-H", hosts] if hosts else [])
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        raise RuntimeError("horovod.run needs libhvd's hvdrun launcher (or mpiexec) on PATH; "
                           "set HVD_HVDRUN to its path")
    return [mpiexec, "-n", str(np)] + (["-hosts", hosts] if hosts else [])


def _elastic_launcher(np, min_np, max_np, slots, reset_limit, cooldown_range, discovery):
    """hvdrun's elastic command line (docs/elastic.md): only hvdrun drives elastic jobs."""
    hvdrun = _hvdrun()
    if not hvdrun:
        raise RuntimeError("horovod.run: an elastic job (min_num_proc, max_num_proc, "
                           "host_discovery_script) is run by libhvd's hvdrun (hvdrun -np N "
                           "--min-np M --max-np X --host-discovery-script SCRIPT), which is "
                           "not on PATH; set HVD_HVDRUN to its path")
    cmd = [hvdrun]
    if np is not None:
        cmd += ["-np", str(int(np))]
    if min_np is not None:
        cmd += ["--min-np", str(int(min_np))]
    if max_np is not None:
        cmd += ["--max-np", str(int(max_np))]
    if slots is not None:
        cmd += ["--slots-per-host", str(int(slots))]
    if reset_limit is not None:
        cmd += ["--reset-limit", str(int(reset_limit))]
    if cooldown_range is not None:
        low, high = cooldown_range
        cmd += ["--blacklist-cooldown-range", str(int(low)), str(int(high))]
    return cmd + ["--host-discovery-script", discovery]


def _read_results(work, np, elastic):
    """{rank: (ok, value)} of the ranks that wrote a result. In an elastic job only the
    last generation that wrote any counts (each rank of a generation that left for new
    hosts or after a failure wrote none, or one a later generation supersedes)."""
    found = {}
    for name in os.listdir(work):
        parts = name.split(".")
        if parts[0] != "result" or parts[-1] != "pkl" or len(parts) != 4 - (not elastic):
            continue
        rank, generation = int(parts[1]), int(parts[2][1:]) if elastic else 0
        found.setdefault(generation, {})[rank] = os.path.join(work, name)
    if not found:
        return {}, np if not elastic else 0
    paths = found[max(found)]
    outcomes = {}
    for rank, path in paths.items():
        with open(path, "rb") as f:
            outcomes[rank] = pickle.load(f)
    return outcomes, np if not elastic else max(paths) + 1


def run(func, args=(), kwargs=None, num_proc=None, min_num_proc=None, max_num_proc=None,
        slots=None, reset_limit=None, cooldown_range=None, hosts=None, hostfile=None,
        host_discovery_script=None, start_timeout=None, ssh_port=None,
        ssh_identity_file=None, disable_cache=None, output_filename=None, verbose=None,
        use_gloo=None, use_mpi=None, mpi_args=None, network_interface=None,
        network_interfaces=None, executable=None, np=None, min_np=None, max_np=None,
        **unsupported):
    """Runs func(*args, **kwargs) on `num_proc` processes (each calls hvd.init()
    itself) and returns the list of return values, by rank (Horovod 0.28.1's
    signature; np, min_np and max_np are its older names).

    With host_discovery_script (and min_num_proc, max_num_proc, reset_limit,
    cooldown_range) the job is elastic, run by hvdrun as a sequence of generations
    (docs/elastic.md); func then runs an hvd.elastic.run function, and the values
    returned are those of the last generation's ranks (the first min_num_proc of them
    when it is given, as Horovod returns). Gloo is not supported: libhvd runs on MPI
    only."""
    num_proc = num_proc if num_proc is not None else np
    min_np = min_num_proc if min_num_proc is not None else min_np
    max_np = max_num_proc if max_num_proc is not None else max_np
    if use_gloo:
        raise NotImplementedError("horovod.run: Gloo is not available in libhvd, which runs "
                                  "on MPI; leave use_gloo unset")
    if unsupported:
        raise TypeError(f"horovod.run: unsupported arguments {sorted(unsupported)}")
    elastic = (host_discovery_script is not None or min_np is not None or max_np is not None
               or cooldown_range is not None)
    if elastic and host_discovery_script is None:
        raise ValueError("horovod.run: min_num_proc, max_num_proc and cooldown_range make an "
                         "elastic job, which needs host_discovery_script (a program printing "
                         "the available hosts, one 'host:slots' a line), as hvdrun needs "
                         "--host-discovery-script")
    if elastic and (hosts or hostfile):
        raise ValueError("horovod.run: an elastic job takes its hosts from "
                         "host_discovery_script; leave hosts and hostfile unset")
    if elastic:
        launcher = _elastic_launcher(num_proc, min_np, max_np, slots, reset_limit,
                                     cooldown_range, host_discovery_script)
    else:
        num_proc = 1 if num_proc is None else int(num_proc)
        launcher = _launcher(num_proc, hosts)
    work = tempfile.mkdtemp(prefix="horovod-run-")
    try:
        # A function of the main script is pickled by reference to __main__: the ranks
        # load that script first (without running its __main__ block).
        main = sys.modules.get("__main__")
        main_path = getattr(main, "__file__", None) if _pickler is pickle else None
        with open(os.path.join(work, "task.pkl"), "wb") as f:
            pickle.dump((main_path, _pickler.dumps((func, tuple(args), dict(kwargs or {})))),
                        f)
        cmd = launcher + (mpi_args.split() if mpi_args else [])
        cmd += [executable or sys.executable, "-m", "horovod.runner.run_task", work]
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH"))
                                            if p)
        stdout = open(output_filename, "w") if output_filename else None
        try:
            proc = subprocess.run(cmd, env=env, stdout=stdout, stderr=subprocess.STDOUT
                                  if stdout else None)
        finally:
            if stdout:
                stdout.close()
        # A failed rank ends the job at once, so its peers may have written no result:
        # the failure a rank reported is the one to raise, not a peer's missing result.
        outcomes, ranks = _read_results(work, num_proc, elastic)
        for rank, (ok, value) in sorted(outcomes.items()):
            if not ok:
                raise RuntimeError(f"horovod.run: rank {rank} failed:\n{value}")
        missing = [rank for rank in range(ranks) if rank not in outcomes]
        if missing or not outcomes:
            raise RuntimeError(f"horovod.run: rank(s) {missing or 'all'} returned no result "
                               f"(exit status {proc.returncode}); see the output above")
        results = [outcomes[rank][1] for rank in range(ranks)]
        return results[:int(min_np)] if elastic and min_np is not None else results
    finally:
        shutil.rmtree(work, ignore_errors=True)
