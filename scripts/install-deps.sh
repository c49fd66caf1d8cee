#!/usr/bin/env bash
# Installs everything libhvd needs to build and test on Debian 12 (MPICH and Open MPI
# side by side), and Python virtual environments (with Debian's site packages visible)
# holding mpi4py: .venv built against MPICH, .venv-openmpi against Open MPI. Run as
# root (or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Installing Open MPI would switch Debian's mpi/mpirun alternatives to it (a higher
# priority): hold them where they are, so that plain `mpiexec` stays MPICH's. The
# build and the tests name their MPI explicitly either way.
$SUDO apt-get install -y -qq --no-install-recommends mpich libmpich-dev >/dev/null
for alt in mpi mpirun mpi-x86_64-linux-gnu; do
  current=$(update-alternatives --query "$alt" 2>/dev/null | sed -n 's/^Value: //p')
  if [[ -n "$current" ]]; then $SUDO update-alternatives --set "$alt" "$current" >/dev/null; fi
done
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential pkg-config meson ninja-build \
  mpich libmpich-dev openmpi-bin libopenmpi-dev \
  hwloc libhwloc-dev libcmocka-dev libcli11-dev libyaml-dev iproute2 util-linux procps \
  python3 python3-dev python3-venv python3-pip python3-numpy python3-pytest python3-torch \
  python3-matplotlib cargo \
  >/dev/null

# mpi4py from PyPI, compiled against one MPI, in a venv that still sees Debian's numpy
# and torch. Tests and examples run /usr/bin/python3 through these venvs.
make_venv() {  # DIR MPICC [LDFLAGS]
  local dir=$1 mpicc=$2 ldflags=${3:-}
  if [[ ! -x $dir/bin/python ]]; then
    /usr/bin/python3 -m venv --system-site-packages "$dir"
  fi
  if ! "$dir/bin/python" -c "import mpi4py" 2>/dev/null; then
    MPICC=$mpicc LDFLAGS=$ldflags "$dir/bin/pip" install -q --no-cache-dir \
      --no-binary=mpi4py mpi4py
  fi
}
# TensorFlow, for hvd.tensorflow's tests, in a venv of its own: it brings its own numpy
# and must not see Debian's packages (nor their torch). No mpi4py: libhvd is loaded by
# ctypes, for either MPI.
make_tf_venv() {  # DIR
  local dir=$1
  if [[ ! -x $dir/bin/python ]]; then
    /usr/bin/python3 -m venv "$dir"
  fi
  if ! "$dir/bin/python" -c "import tensorflow, pytest" 2>/dev/null; then
    "$dir/bin/pip" install -q --no-cache-dir tensorflow-cpu==2.21.0 pytest
  fi
}
# Keras 3 on the torch backend, for hvd.keras's torch tests (meson -Dkeras_torch_venv=
# .venv-keras-torch), only when HVD_KERAS_TORCH=1: Keras 3 needs torch >= 2.1 (Debian's
# 1.13 lacks float8 dtypes), and PyPI's torch wheels are CUDA builds (torch 2.15.0
# alone is 539 MB, its nvidia-* dependencies gigabytes more): minutes of install that
# every machine should not pay. Keras on TensorFlow needs nothing more (.venv-tf has it).
make_keras_torch_venv() {  # DIR
  local dir=$1
  if [[ ! -x $dir/bin/python ]]; then
    /usr/bin/python3 -m venv "$dir"
  fi
  if ! KERAS_BACKEND=torch "$dir/bin/python" -c "import torch, keras, pytest" 2>/dev/null; then
    "$dir/bin/pip" install -q --no-cache-dir torch==2.15.0 keras==3.15.1 pytest
  fi
}
# The two builds of mpi4py take a minute or more each on one core: side by side.
make_venv .venv mpicc.mpich &
mpich_venv=$!
make_tf_venv .venv-tf &
tf_venv=$!
# Debian's Open MPI keeps libmpi.so out of the default search path for the linker.
make_venv .venv-openmpi mpicc.openmpi -L/usr/lib/x86_64-linux-gnu/openmpi/lib
wait "$mpich_venv"
wait "$tf_venv"
if [[ ${HVD_KERAS_TORCH:-0} == 1 ]]; then
  make_keras_torch_venv .venv-keras-torch
fi
echo "libhvd dependencies installed"
