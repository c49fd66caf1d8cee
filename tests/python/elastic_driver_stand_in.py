"""hvdrun's side of an elastic job, played by a test: its notification listener, the
launch of one generation with the environment docs/elastic.md gives each worker, and
the workers' JSON-lines logs. Used by test_elastic_generations.py (a torch worker) and
test_keras_elastic_generations.py (a Keras one); a worker calls play_node() first.
"""
import json
import os
import socket
import subprocess
import sys
import threading

MPIEXEC = os.environ.get("HVD_TEST_MPIEXEC", "mpiexec")
TOKEN = "0123456789abcdef0123456789abcdef"
LAUNCH_TIMEOUT_S = 240


class Listener:
    """hvdrun's notification listener: takes connections, keeps the first line of
    each, and answers one carrying `expected_hello` with `lines`."""

    def __init__(self, expected_hello, lines=()):
        self.expected_hello = expected_hello
        self.lines = list(lines)
        self.hellos = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._connections = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return  # closed
            self._connections.append(connection)
            connection.settimeout(30)
            hello = connection.makefile("rb").readline().decode()
            self.hellos.append(hello)
            if hello == self.expected_hello:
                for line in self.lines:
                    connection.sendall(line.encode())
            else:
                connection.close()

    def close(self):
        self._server.close()
        for connection in self._connections:
            connection.close()


def launch(worker, out, generation, state_dirs, listener=None, worker_args=(), env=None):
    """Runs one generation of `worker` on len(state_dirs) ranks; rank r plays the node
    whose state directory is state_dirs[r]."""
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("HVD_ELASTIC_", "HOROVOD_STALL_SHUTDOWN"))}
    environment.update(HOROVOD_ELASTIC="1", HVD_ELASTIC_GENERATION=str(generation),
                       HVD_TEST_STATE_DIRS=",".join(state_dirs))
    if listener is not None:
        environment.update(HVD_ELASTIC_DRIVER=listener.address, HVD_ELASTIC_TOKEN=TOKEN)
    environment.update(env or {})
    # The project's mpiexec wrapper lets Open MPI oversubscribe already.
    command = [MPIEXEC, "-n", str(len(state_dirs))]
    command += [sys.executable, worker, str(out)] + list(worker_args)
    return subprocess.run(command, env=environment, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)


def play_node():
    """In a worker, before hvd reads the environment: HVD_TEST_STATE_DIRS (one per
    rank) gives this rank the HVD_ELASTIC_STATE_DIR of the "host" it plays: ranks with
    the same directory share a node's state files, a rank with a directory of its own
    is a new host."""
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    dirs = os.environ.get("HVD_TEST_STATE_DIRS")
    if dirs:
        os.environ["HVD_ELASTIC_STATE_DIR"] = dirs.split(",")[rank]


def events(out, generation, rank):
    with open(os.path.join(out, f"gen{generation}.rank{rank}.log")) as f:
        return [json.loads(line) for line in f]


def first(out, generation, rank, event):
    return next(e for e in events(out, generation, rank) if e["event"] == event)


def output(result):
    return f"status {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
