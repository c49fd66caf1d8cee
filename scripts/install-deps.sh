#!/usr/bin/env bash
# Installs everything libhvd needs to build and test on Debian 12, and a Python
# virtual environment (.venv, with Debian's site packages visible) holding mpi4py
# built against MPICH. Run as root (or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential pkg-config meson ninja-build \
  mpich libmpich-dev hwloc libhwloc-dev libcmocka-dev libcli11-dev \
  python3 python3-dev python3-venv python3-pip python3-numpy python3-pytest python3-torch \
  >/dev/null

# mpi4py from PyPI, compiled against MPICH, in a venv that still sees Debian's numpy
# and torch. Tests and examples run /usr/bin/python3 through this venv.
if [[ ! -x .venv/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
if ! .venv/bin/python -c "import mpi4py" 2>/dev/null; then
  MPICC=mpicc .venv/bin/pip install -q --no-cache-dir --no-binary=mpi4py mpi4py
fi
echo "libhvd dependencies installed"
