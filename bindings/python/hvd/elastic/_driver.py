"""Rank 0's connection to hvdrun's notification listener (HVD_ELASTIC_DRIVER).

A background thread connects, proves itself with `HELLO <token> <generation>` and
reads text lines; each `HOSTS_UPDATED <timestamp> <result>` is handed to the
listeners (the states of running elastic functions, through on_hosts_updated). Lines
it does not know are skipped: the protocol may grow. A lost or refused connection only
means no host change is noticed: the training goes on, and hvdrun still ends the
generation when a host fails.
"""
import socket
import sys
import threading

from ._host_update import HostUpdateResult

_CONNECT_TIMEOUT_SECONDS = 10


def parse_address(address):
    """(host, port) of "host:port" or "[v6 address]:port"; ValueError when malformed."""
    host, colon, port = address.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"HVD_ELASTIC_DRIVER must be <address>:<port>, not {address!r} "
                         "(hvdrun sets it for elastic jobs)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def parse_line(line):
    """(timestamp, HostUpdateResult) for a HOSTS_UPDATED line, None for any other."""
    fields = line.split()
    if len(fields) != 3 or fields[0] != "HOSTS_UPDATED":
        return None
    try:
        return float(fields[1]), HostUpdateResult(int(fields[2]) & HostUpdateResult.mixed)
    except ValueError:
        return None


class DriverConnection:
    """The notification thread; `deliver` is called with (timestamp, result)."""

    def __init__(self, address, token, generation, deliver):
        self._address = parse_address(address)
        self._hello = f"HELLO {token} {generation}\n".encode()
        self._deliver = deliver
        self._thread = threading.Thread(target=self._listen, name="hvd-elastic-driver",
                                        daemon=True)

    def start(self):
        self._thread.start()

    def _listen(self):
        try:
            with socket.create_connection(self._address, _CONNECT_TIMEOUT_SECONDS) as sock:
                sock.settimeout(None)
                sock.sendall(self._hello)
                for raw in sock.makefile("rb"):
                    update = parse_line(raw.decode("utf-8", "replace"))
                    if update is not None:
                        self._deliver(*update)
        except OSError as error:
            host, port = self._address
            sys.stderr.write(f"hvd.elastic: lost the connection to hvdrun's notification "
                             f"listener at {host}:{port} ({error}): changes of hosts will not "
                             "be noticed in this generation\n")
