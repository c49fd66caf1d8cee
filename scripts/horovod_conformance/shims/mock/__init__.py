"""The `mock` package name for interpreters without it: the standard unittest.mock.
Only put on sys.path by the conformance driver when `import mock` fails."""
from unittest.mock import *  # noqa: F401,F403
