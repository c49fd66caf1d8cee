#!/bin/sh
# A stand-in MPI launcher for hvdrun's tests. Installed under a name per MPI
# (fake_mpich, fake_openmpi, fake_intel, fake_unknown, fake_broken), it prints that
# MPI's `--version` banner. Run as a launcher it prints each argument it received
# on its own line between markers, so tests see exactly what hvdrun passed; with
# FAKE_MPI_READY set it first writes to that FIFO and then waits for a signal (with
# FAKE_MPI_DEAF set too, it and a stand-in rank, sleep FAKE_MPI_DEAF seconds, ignore
# SIGINT, SIGTERM and SIGHUP: a launcher that does not end); with FAKE_MPI_CRASH set
# it starts a stand-in rank (sleep FAKE_MPI_CRASH seconds) and dies of SIGSEGV, as
# Open MPI's mpirun has done.
flavor=$(basename "$0")
if [ "$1" = "--version" ]; then
  case "$flavor" in
    fake_mpich)
      printf 'HYDRA build details:\n    Version:                                 4.0.2\n'
      printf '    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n' ;;
    fake_openmpi)
      printf 'mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n' ;;
    fake_intel)
      printf 'Intel(R) MPI Library for Linux* OS, Version 2021.9 Build 20230307 (id: d82b3071db)\n'
      printf 'Copyright 2003-2023, Intel Corporation.\n' ;;
    fake_unknown)
      printf 'FooMPI launcher 1.0\n' ;;
    *)
      echo "fake launcher: cannot tell its version" >&2
      exit 3 ;;
  esac
  exit 0
fi
if [ -n "${FAKE_MPI_CRASH:-}" ]; then
  sleep "$FAKE_MPI_CRASH" &
  kill -SEGV $$
fi
if [ -n "$FAKE_MPI_READY" ] && [ -n "${FAKE_MPI_DEAF:-}" ]; then
  trap '' INT TERM HUP
  sleep "$FAKE_MPI_DEAF" &
  echo ready > "$FAKE_MPI_READY"
  wait
  exit 0
fi
if [ -n "$FAKE_MPI_READY" ]; then
  echo ready > "$FAKE_MPI_READY"
  exec sleep 300
fi
echo "--- launcher arguments"
for arg in "$@"; do printf '%s\n' "$arg"; done
echo "--- end"
