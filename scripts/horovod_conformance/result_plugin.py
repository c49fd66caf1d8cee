"""pytest plugin loaded into every rank of a conformance job (-p result_plugin).

Writes one JSON line per event to $HVD_CONFORMANCE_DIR/rank<R>.jsonl, flushed at once,
so the driver learns each test's fate even when the job is later killed: "start" before
a test runs, then its outcome. A test that runs past $HVD_CONFORMANCE_TEST_TIMEOUT
seconds is recorded as "hang" and ends the process: its peers are then stuck in a
collective that will never complete, and the driver goes on with a fresh job. The
deadline is kept by a thread, since a signal handler would not run while the main
thread waits inside the library.
"""
import faulthandler
import json
import os
import threading

_DIR = os.environ["HVD_CONFORMANCE_DIR"]
_TIMEOUT = int(os.environ.get("HVD_CONFORMANCE_TEST_TIMEOUT", "60"))
_RANK = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
_log = open(os.path.join(_DIR, f"rank{_RANK}.jsonl"), "a", buffering=1)
_current = None
_deadline = None


def _record(test, outcome, detail=""):
    _log.write(json.dumps({"test": test, "outcome": outcome, "detail": detail[-2000:]}) + "\n")
    _log.flush()
    os.fsync(_log.fileno())


def _on_deadline(test):
    # Where every thread of this rank is stuck, beside the records (pytest captures
    # the test's stderr, which would take the dump with it).
    with open(os.path.join(_DIR, f"rank{_RANK}.stacks"), "a") as stacks:
        stacks.write(f"{test}: still running after {_TIMEOUT} s\n")
        stacks.flush()
        faulthandler.dump_traceback(file=stacks, all_threads=True)
    _record(test, "hang", f"still running after {_TIMEOUT} s; stacks in "
            f"{os.path.join(_DIR, f'rank{_RANK}.stacks')}")
    os._exit(3)


def pytest_runtest_logstart(nodeid, location):
    global _current, _deadline
    _current = nodeid
    _record(nodeid, "start")
    _deadline = threading.Timer(_TIMEOUT, _on_deadline, args=(nodeid,))
    _deadline.daemon = True
    _deadline.start()


def pytest_runtest_logreport(report):
    # One report per phase; the test's outcome is the first failure or the call's.
    if report.when == "call" or report.outcome != "passed":
        outcome = report.outcome
        detail = str(report.longrepr) if report.longrepr is not None else ""
        if outcome == "skipped" and isinstance(report.longrepr, tuple):
            detail = str(report.longrepr[2])
        if report.when != "call" and outcome == "failed":
            outcome = "error"
        _record(report.nodeid, outcome, detail)


def pytest_runtest_logfinish(nodeid, location):
    if _deadline is not None:
        _deadline.cancel()
    _record(nodeid, "finish")
