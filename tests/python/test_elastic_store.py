"""An elastic job's state files (hvd.elastic._store) and the lines of hvdrun's
notification channel (hvd.elastic._driver), within one process."""
import os
import stat

import pytest

from hvd.elastic import HostUpdateResult
from hvd.elastic._driver import parse_address, parse_line
from hvd.elastic._store import StateDir, StateDirError


def test_a_missing_directory_is_created_for_this_user_only(tmp_path):
    path = tmp_path / "hvd-elastic-0-token"
    StateDir(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_an_existing_directory_of_ours_is_made_private(tmp_path):
    path = tmp_path / "open"
    path.mkdir(mode=0o755)
    os.chmod(path, 0o755)
    StateDir(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_another_users_directory_is_refused(tmp_path):
    if os.getuid() == 0:
        path = tmp_path / "theirs"
        path.mkdir()
        os.chown(path, 65534, 65534)
        path = str(path)
    else:
        path = "/usr"  # root's
    with pytest.raises(StateDirError, match="belongs to user id .* not to this process's"):
        StateDir(path)


def test_a_file_in_the_directorys_place_is_refused(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(StateDirError, match="is not a directory"):
        StateDir(str(path))


def test_a_relative_path_is_refused():
    with pytest.raises(ValueError, match="absolute path"):
        StateDir("relative/dir")


def test_the_newest_commit_of_any_local_rank_is_read_back(tmp_path):
    store = StateDir(str(tmp_path / "d"))
    assert store.newest() is None
    store.write(0, 3, b"three")
    store.write(1, 4, b"four")
    store.write(0, 5, b"five\n\x00bytes")  # replaces local rank 0's file
    assert store.newest() == (5, b"five\n\x00bytes")
    assert sorted(os.listdir(store.path)) == ["state.0", "state.1"]  # no temporary left


def test_a_corrupt_or_torn_file_is_ignored_with_a_warning(tmp_path):
    store = StateDir(str(tmp_path / "d"))
    store.write(0, 2, b"good state")
    store.write(1, 9, b"newer state")
    path = store.file_of(1)
    with open(path, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        f.write(b"X")  # one byte changed
    with pytest.warns(RuntimeWarning, match=r"state\.1: the checksum of commit 9 does not match"):
        assert store.newest() == (2, b"good state")
    store.write(1, 9, b"newer state")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 3)  # a write cut short
    with pytest.warns(RuntimeWarning, match="commit 9 should hold 11 bytes, it holds 8"):
        assert store.newest() == (2, b"good state")
    with open(store.file_of(2), "wb") as f:
        f.write(b"not a state file at all")
    with pytest.warns(RuntimeWarning, match="not a libhvd state header"):
        assert store.newest() == (2, b"good state")


def test_remove_all_takes_state_and_temporary_files_only(tmp_path):
    store = StateDir(str(tmp_path / "d"))
    store.write(0, 1, b"a")
    store.write(3, 1, b"b")
    open(os.path.join(store.path, ".state.0.123.tmp"), "wb").close()  # a killed writer's
    open(os.path.join(store.path, "notes"), "wb").close()
    store.remove_all()
    assert os.listdir(store.path) == ["notes"]


def test_hosts_updated_lines():
    assert parse_line("HOSTS_UPDATED 1765132800.25 3\n") == (1765132800.25,
                                                             HostUpdateResult.mixed)
    assert parse_line("HOSTS_UPDATED 12 1") == (12.0, HostUpdateResult.removed)
    # Lines of a protocol that grew, or malformed ones, are skipped.
    assert parse_line("HOSTS_UPDATED 12") is None
    assert parse_line("HOSTS_UPDATED x 1") is None
    assert parse_line("SOMETHING_NEW 1 2\n") is None


def test_driver_addresses():
    assert parse_address("10.0.0.1:4000") == ("10.0.0.1", 4000)
    assert parse_address("[::1]:4000") == ("::1", 4000)
    for bad in ("host", "host:", ":80", "host:99999", "host:port"):
        with pytest.raises(ValueError, match="HVD_ELASTIC_DRIVER must be"):
            parse_address(bad)
