"""The `hvdrun`, `hvd-bench` and `hvd-info` commands of a pip install.

A wheel carries the programs inside the package (hvd/_bin, next to libhvd); pip puts
these small launchers on the environment's PATH, and each replaces itself with the
program, so signals, the exit status and the terminal are the program's own.
"""
import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")


def _exec(program):
    path = os.path.join(_BIN, program)
    if not os.access(path, os.X_OK):
        sys.stderr.write(f"{program}: {path} is missing: this hvd package was not installed "
                         "by pip from libhvd's sources (use the program of your install)\n")
        sys.exit(127)
    os.execv(path, [program] + sys.argv[1:])


def hvdrun():
    _exec("hvdrun")


def hvd_bench():
    _exec("hvd-bench")


def hvd_info():
    _exec("hvd-info")
