"""One rank of horovod.run: python -m horovod.runner.run_task DIR.

Loads (func, args, kwargs) from DIR/task.pkl, runs it, and writes (True, result) or
(False, traceback text) to DIR/result.<rank>.pkl, or in a generation G of an elastic
job to DIR/result.<rank>.gG.pkl. A worker of an elastic job that leaves its generation
(hvd.elastic.run's SystemExit 75 or 76) writes nothing and exits with that status, for
hvdrun to start the next generation.
"""
import importlib.util
import os
import pickle
import sys
import traceback


def _load_main(path):
    """Makes `path` the __main__ module, run under another name so that its
    `if __name__ == "__main__":` block does not start a job inside the job."""
    spec = importlib.util.spec_from_file_location("__mp_main__", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["__mp_main__"] = module
    spec.loader.exec_module(module)
    sys.modules["__main__"] = module


def _rank():
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "HOROVOD_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


# hvd.elastic.run's statuses for a generation's end (bindings/python/hvd/elastic/_run.py).
_ELASTIC_LEAVE_STATUSES = (75, 76)


def main(work):
    try:
        import cloudpickle as loader
    except ImportError:
        loader = pickle
    rank = _rank()
    generation = os.environ.get("HVD_ELASTIC_GENERATION")
    try:
        with open(os.path.join(work, "task.pkl"), "rb") as f:
            main_path, payload = pickle.load(f)
        if main_path:
            _load_main(main_path)
        func, args, kwargs = loader.loads(payload)
        outcome = (True, func(*args, **kwargs))
    except SystemExit as leave:
        if generation is not None and leave.code in _ELASTIC_LEAVE_STATUSES:
            return leave.code
        outcome = (False, traceback.format_exc())
    except BaseException:  # noqa: BLE001 - reported to the caller of horovod.run
        outcome = (False, traceback.format_exc())
    # Written whole or not at all: a peer's failure may end this process at any moment.
    name = f"result.{rank}.pkl" if generation is None else f"result.{rank}.g{generation}.pkl"
    path = os.path.join(work, name)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(outcome, f)
    os.replace(path + ".tmp", path)
    return 0 if outcome[0] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
