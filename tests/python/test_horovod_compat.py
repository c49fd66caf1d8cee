"""The `horovod` stand-in: imports as Horovod's torch API, and steps aside when a real
Horovod is importable elsewhere on sys.path."""
import os
import subprocess
import sys
import textwrap

import pytest

from timeouts import scaled

BINDINGS = os.environ["PYTHONPATH"].split(os.pathsep)[0]


def run_python(code, extra_path=None, script=None, **env):
    """Runs `code` (or the file `script`) in a fresh interpreter; returns its output."""
    path = [BINDINGS] + ([extra_path] if extra_path else [])
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(path), **env)
    # A fresh single-process program, not a rank of this job: drop what the launcher
    # (Hydra, or Open MPI's mpirun and PMIx) told this rank, keep the settings.
    keep = ("MPIR_CVAR_POLLS_BEFORE_YIELD", "OMPI_ALLOW_RUN_AS_ROOT",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "OMPI_MCA_mpi_yield_when_idle",
            "OMPI_MCA_btl_vader_single_copy_mechanism", "OMPI_MCA_rmaps_base_oversubscribe")
    launcher = ("PMI_", "MPIR_CVAR_", "HYDRA_", "OMPI_", "PMIX_", "OPAL_", "ORTE_")
    for var in [k for k in environ if k.startswith(launcher) and k not in keep]:
        environ.pop(var)
    argv = [sys.executable] + ([script] if script else ["-c", code])
    done = subprocess.run(argv, env=environ, capture_output=True, text=True,
                          timeout=scaled(120))
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


def test_modules_horovod_users_import():
    code = textwrap.dedent("""\
        import horovod.torch.mpi_ops as m, horovod.torch.compression as c
        import horovod.torch.optimizer as o, horovod.torch.functions as f
        import horovod.torch.sync_batch_norm as s, horovod.torch as hvd
        from horovod.common.util import env, split_list
        from horovod.common.basics import HorovodBasics
        from horovod.common.process_sets import ProcessSet, add_process_set
        from horovod.common.exceptions import (HorovodInternalError,
            HorovodVersionMismatchError, HostsUpdatedInterrupt)
        from horovod.runner.util.threads import in_thread
        import horovod, horovod.runner, os, threading
        assert m.allreduce is hvd.allreduce and m.sparse_allreduce_async
        assert c.Compression.fp16 and o.DistributedOptimizer and f.broadcast_parameters
        assert s.SyncBatchNorm is hvd.SyncBatchNorm and callable(horovod.run)
        assert issubclass(HorovodInternalError, RuntimeError)
        assert issubclass(HorovodVersionMismatchError, ImportError)
        assert HostsUpdatedInterrupt(True).skip_sync
        assert HorovodBasics().mpi_built()
        assert hvd.mpi_ops is m and hvd.mpi_ops._basics.mpi_built()
        assert str(ProcessSet([1, 0])) == \
            "ProcessSet(process_set_id=None, ranks=[0, 1], mpi_comm=None)"
        os.environ.pop('HVD_TEST_VAR', None)
        with env(HVD_TEST_VAR=5):
            assert os.environ['HVD_TEST_VAR'] == '5'
        assert 'HVD_TEST_VAR' not in os.environ
        assert split_list(list(range(5)), 2) == [[0, 1, 2], [3, 4]]
        ran = threading.Event()
        t = in_thread(ran.set)
        t.join(30)
        assert ran.is_set() and t.daemon
        print('ok')
        """)
    pytest.importorskip("torch")
    assert run_python(code) == "ok"


def test_parts_not_provided_say_so_at_import():
    code = textwrap.dedent("""\
        import horovod
        for name in ('horovod.mxnet', 'horovod.ray', 'horovod.spark'):
            try:
                __import__(name)
            except ImportError as e:
                assert 'stand-in' in str(e) and name in str(e), e
            else:
                raise AssertionError(name)
        # horovod.mxnet in a Horovod script: the same words, as an AttributeError
        # (so hasattr() is False, as for any missing attribute).
        import horovod.torch as hvd
        for module, attribute in ((horovod, 'mxnet'), (horovod, 'spark')):
            try:
                getattr(module, attribute)
            except AttributeError as e:
                assert 'stand-in' in str(e) and attribute in str(e), e
            else:
                raise AssertionError(attribute)
            assert not hasattr(module, attribute)
        try:
            hvd.no_such_thing
        except AttributeError as e:
            assert str(e) == "module 'horovod.torch' has no attribute 'no_such_thing'", e
        from horovod import torch as submodule
        assert submodule is hvd
        print('ok')
        """)
    pytest.importorskip("torch")
    assert run_python(code, HVD_HOROVOD_COMPAT="force") == "ok"


def test_size_one_optimizer_registers_no_hooks():
    code = textwrap.dedent("""\
        import torch, horovod.torch as hvd
        hvd.init()
        model = torch.nn.Linear(3, 1)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
        print(len(opt._grad_accs), len(opt._handles))
        hvd.shutdown()
        """)
    pytest.importorskip("torch")
    assert run_python(code) == "0 0"


HOROVOD_RUN_SCRIPT = '''
import horovod


def rank_and_sum(scale):
    import numpy as np
    import hvd
    hvd.init()
    total = hvd.allreduce(np.full(2, scale * (hvd.rank() + 1.0)), op=hvd.Sum)
    rank = hvd.rank()
    hvd.shutdown()
    return rank, total.tolist()


def fails():
    raise KeyError("from the task")


if __name__ == "__main__":
    print(horovod.run(rank_and_sum, args=(2.0,), np=2))
    try:
        horovod.run(fails, np=2)
    except RuntimeError as e:
        print("failed:", "KeyError" in str(e))
'''


def test_horovod_run_launches_a_function_on_n_processes(tmp_path):
    script = tmp_path / "launch.py"
    script.write_text(HOROVOD_RUN_SCRIPT)
    lines = run_python(None, script=str(script)).splitlines()
    # Between the two, the launcher may report the failed job in its own words (MPICH's
    # "BAD TERMINATION" banner goes to the job's stdout).
    assert lines[0] == "[(0, [6.0, 6.0]), (1, [6.0, 6.0])]"
    assert lines[-1] == "failed: True"
