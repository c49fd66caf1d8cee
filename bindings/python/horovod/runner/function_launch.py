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


def _launcher(np, hosts):
    hvdrun = os.environ.get("HVD_HVDRUN") or shutil.which("hvdrun")
    if hvdrun:
        cmd = [hvdrun, "-np", str(np)]
        return cmd + (["-H", hosts] if hosts else [])
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        raise RuntimeError("horovod.run needs libhvd's hvdrun launcher (or mpiexec) on PATH; "
                           "set HVD_HVDRUN to its path")
    return [mpiexec, "-n", str(np)] + (["-hosts", hosts] if hosts else [])


def run(func, args=(), kwargs=None, np=1, min_np=None, max_np=None, slots=None, reset_limit=None,
        hosts=None, hostfile=None, start_timeout=None, ssh_port=None, ssh_identity_file=None,
        disable_cache=None, output_filename=None, verbose=None, use_gloo=None, use_mpi=None,
        mpi_args=None, network_interface=None, executable=None, **unsupported):
    """Runs func(*args, **kwargs) on `np` processes (each calls hvd.init() itself) and
    returns the list of return values, by rank. Elastic (min_np, max_np) and Gloo
    options are not supported: libhvd runs on MPI only."""
    if min_np is not None or max_np is not None or use_gloo:
        raise NotImplementedError("horovod.run: elastic jobs (min_np/max_np) and Gloo are not "
                                  "available in libhvd; use a fixed np over MPI")
    if unsupported:
        raise TypeError(f"horovod.run: unsupported arguments {sorted(unsupported)}")
    work = tempfile.mkdtemp(prefix="horovod-run-")
    try:
        # A function of the main script is pickled by reference to __main__: the ranks
        # load that script first (without running its __main__ block).
        main = sys.modules.get("__main__")
        main_path = getattr(main, "__file__", None) if _pickler is pickle else None
        with open(os.path.join(work, "task.pkl"), "wb") as f:
            pickle.dump((main_path, _pickler.dumps((func, tuple(args), dict(kwargs or {})))),
                        f)
        cmd = _launcher(int(np), hosts) + (mpi_args.split() if mpi_args else [])
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
        outcomes = {}
        for rank in range(int(np)):
            path = os.path.join(work, f"result.{rank}.pkl")
            if os.path.exists(path):
                with open(path, "rb") as f:
                    outcomes[rank] = pickle.load(f)
        for rank, (ok, value) in sorted(outcomes.items()):
            if not ok:
                raise RuntimeError(f"horovod.run: rank {rank} failed:\n{value}")
        missing = [rank for rank in range(int(np)) if rank not in outcomes]
        if missing:
            raise RuntimeError(f"horovod.run: rank(s) {missing} returned no result (exit "
                               f"status {proc.returncode}); see the output above")
        results = [outcomes[rank][1] for rank in range(int(np))]
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)
