"""The suites' one knob for slow machines: HVD_TEST_TIMEOUT_MULTIPLIER (a whole number,
default 1) scales every timeout a test sets for itself, as scripts/run-tests.sh scales
meson's own with it."""
import os


def scaled(seconds):
    """seconds times the multiplier."""
    factor = int(os.environ.get("HVD_TEST_TIMEOUT_MULTIPLIER", "1") or "1")
    return seconds * max(factor, 1)
