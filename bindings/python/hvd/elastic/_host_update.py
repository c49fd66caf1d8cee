"""Horovod's names for a change of hosts."""
from enum import IntFlag


class HostUpdateResult(IntFlag):
    """What changed, as hvdrun's HOSTS_UPDATED line says (Horovod's bit mask)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class HostsUpdatedInterrupt(RuntimeError):
    """Raised on every rank at the same check_host_updates (or commit) when hosts were
    added or removed. In elastic mode hvd.elastic.run saves and persists the current
    state (nothing is rolled back) and ends the generation with status 75, so that
    hvdrun starts the next one on the new hosts. skip_sync: Horovod's flag, true when
    hosts were only removed."""

    def __init__(self, skip_sync=False):
        super().__init__("the set of hosts changed")
        self.skip_sync = skip_sync
