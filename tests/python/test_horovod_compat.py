"""The `horovod` stand-in: imports as Horovod's torch API, and steps aside when a real
Horovod is importable elsewhere on sys.path."""
import os
import subprocess
import sys

import pytest

BINDINGS = os.environ["PYTHONPATH"].split(os.pathsep)[0]


def run_python(code, extra_path=None, **env):
    path = [BINDINGS] + ([extra_path] if extra_path else [])
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(path), **env)
    for var in [k for k in environ if k.startswith(("PMI_", "MPIR_CVAR_", "HYDRA_"))]:
        if var != "MPIR_CVAR_POLLS_BEFORE_YIELD":
            environ.pop(var)  # a fresh single-process program, not a rank of this job
    done = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture()
def fake_real_horovod(tmp_path):
    pkg = tmp_path / "horovod"
    (pkg / "torch").mkdir(parents=True)
    (pkg / "__init__.py").write_text("REAL = True\n")
    (pkg / "torch" / "__init__.py").write_text("WHICH = 'real'\n")
    return str(tmp_path)


def test_stand_in_is_used_without_a_real_horovod():
    out = run_python("import horovod, horovod.torch as hvd; "
                     "print(horovod.backend, hvd.DistributedOptimizer.__module__)")
    assert out == "libhvd hvd.torch.optimizer"


def test_real_horovod_takes_precedence(fake_real_horovod):
    out = run_python("import horovod, horovod.torch as t; print(horovod.REAL, t.WHICH)",
                     extra_path=fake_real_horovod)
    assert out == "True real"


def test_force_and_off(fake_real_horovod):
    out = run_python("import horovod; print(horovod.backend)", extra_path=fake_real_horovod,
                     HVD_HOROVOD_COMPAT="force")
    assert out == "libhvd"
    out = run_python("try:\n import horovod\nexcept ImportError as e:\n print('off', e)",
                     HVD_HOROVOD_COMPAT="off")
    assert out.startswith("off")


def test_horovod_torch_runs_on_one_rank():
    code = ("import torch, horovod.torch as hvd\n"
            "hvd.init()\n"
            "x = hvd.allreduce(torch.ones(3), name='x')\n"
            "print(hvd.size(), x.tolist())\n"
            "hvd.shutdown()\n")
    pytest.importorskip("torch")
    assert run_python(code) == "1 [1.0, 1.0, 1.0]"
