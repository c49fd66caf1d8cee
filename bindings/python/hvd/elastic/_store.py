"""The committed state's files in a node's HVD_ELASTIC_STATE_DIR.

A file per local rank, `state.<local_rank>`, each written whole to a temporary file in
the same directory and renamed over the old one, so a reader sees the previous commit
or the new one, never a mix. A header line carries the commit number, the payload's
length and its SHA-256; a file whose header or checksum does not hold (a write that was
cut short, a corrupted file) is ignored with a warning and never loaded.
"""
import hashlib
import os
import re
import stat
import warnings

_MAGIC = b"HVDSTATE1"
_HEADER = re.compile(rb"HVDSTATE1 (\d+) (\d+) ([0-9a-f]{64})\n")
_MAX_HEADER_BYTES = 128
_FILE_NAME = re.compile(r"state\.(\d+)")


class StateDirError(PermissionError):
    """The state directory cannot be used safely (another user's, not a directory)."""


class StateDir:
    """The node's state directory: created with mode 0700 if missing, refused when it
    is not a directory of this user's (another user could plant or read the state)."""

    def __init__(self, path):
        if not path or not os.path.isabs(path):
            raise ValueError(f"HVD_ELASTIC_STATE_DIR must be an absolute path, not {path!r} "
                             "(hvdrun sets it for elastic jobs)")
        self.path = path
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except FileExistsError:
            pass  # a file or link in its place: refused below, with what it is
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            raise StateDirError(f"hvd.elastic: the state directory {path} is not a directory; "
                                "remove it or set HVD_ELASTIC_STATE_DIR to another path")
        if info.st_uid != os.getuid():
            raise StateDirError(
                f"hvd.elastic: the state directory {path} belongs to user id {info.st_uid}, "
                f"not to this process's user id {os.getuid()}: another user's job, or a "
                "directory left behind; remove it or launch with another job token")
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(path, 0o700)  # ours: the state is nobody else's to read

    def file_of(self, local_rank):
        return os.path.join(self.path, f"state.{local_rank}")

    def write(self, local_rank, commit_number, payload):
        """Replaces this local rank's file with commit `commit_number` holding `payload`."""
        digest = hashlib.sha256(payload).hexdigest().encode()
        header = b"%s %d %d %s\n" % (_MAGIC, commit_number, len(payload), digest)
        final = self.file_of(local_rank)
        temporary = os.path.join(self.path, f".state.{local_rank}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.write(header)
                out.write(payload)
            os.replace(temporary, final)
        except BaseException:
            _remove_quietly(temporary)
            raise

    def newest(self):
        """(commit number, payload) of the newest valid file of any local rank, or None."""
        headers = []
        for name in self._state_files():
            path = os.path.join(self.path, name)
            header = _read_header(path)
            if header is not None:
                headers.append((header[0], path, header))
        for number, path, header in sorted(headers, reverse=True):
            payload = _read_payload(path, header)
            if payload is not None:
                return number, payload
        return None

    def remove_all(self):
        """Removes every state file and leftover temporary file (the job is done)."""
        for name in os.listdir(self.path):
            if _FILE_NAME.fullmatch(name) or (name.startswith(".state.") and name.endswith(".tmp")):
                _remove_quietly(os.path.join(self.path, name))

    def _state_files(self):
        return sorted(name for name in os.listdir(self.path) if _FILE_NAME.fullmatch(name))


def _ignored(path, why):
    warnings.warn(f"hvd.elastic: ignoring the state file {path}: {why}", RuntimeWarning,
                  stacklevel=3)


def _read_header(path):
    """(commit number, payload length, digest, header length), or None when invalid."""
    try:
        with open(path, "rb") as f:
            line = f.readline(_MAX_HEADER_BYTES)
    except OSError as error:
        _ignored(path, f"it cannot be read ({error})")
        return None
    match = _HEADER.fullmatch(line)
    if match is None:
        _ignored(path, "its header is not a libhvd state header (a torn or foreign file)")
        return None
    return int(match.group(1)), int(match.group(2)), match.group(3).decode(), len(line)


def _read_payload(path, header):
    number, length, digest, header_length = header
    try:
        with open(path, "rb") as f:
            f.seek(header_length)
            payload = f.read(length + 1)
    except OSError as error:
        _ignored(path, f"it cannot be read ({error})")
        return None
    if len(payload) != length:
        _ignored(path, f"commit {number} should hold {length} bytes, it holds {len(payload)} "
                 "(a write cut short)")
        return None
    if hashlib.sha256(payload).hexdigest() != digest:
        _ignored(path, f"the checksum of commit {number} does not match (corrupted)")
        return None
    return payload


def _remove_quietly(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
