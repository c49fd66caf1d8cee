"""The `cloudpickle` package name for interpreters without it: the standard pickle
(enough for module-level functions). Only put on sys.path by the conformance driver
when `import cloudpickle` fails."""
from pickle import *  # noqa: F401,F403
from pickle import dumps, loads  # noqa: F401
