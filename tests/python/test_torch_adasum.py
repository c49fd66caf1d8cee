"""op=hvd.Adasum through hvd.torch (and the horovod stand-in): the collectives against
adasum_reference.py for every float dtype, and DistributedOptimizer(op=hvd.Adasum)
against Horovod's delta optimizer computed by hand (each rank steps its own optimizer
on its own gradients; the parameter changes are combined with Adasum)."""
import pytest

torch = pytest.importorskip("torch")
import hvd.torch as hvd  # noqa: E402
from adasum_reference import (adasum, is_power_of_two, power_of_two_set,  # noqa: E402
                              relative_error)
from test_torch_optimizer import (assert_same_on_every_rank, batch, loss_fn,  # noqa: E402
                                  make_model, params_of)

pytestmark = pytest.mark.usefixtures("world")

TOL = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 2e-6, torch.float64: 1e-12}


def name_of(dtype):
    return str(dtype).split(".")[-1]


def power_of_two_world():
    if not is_power_of_two(hvd.size()):
        pytest.skip("Adasum needs a power-of-two number of ranks")


def rank_tensors(dtype, n, seed=0):
    """One tensor per rank, as `dtype`: a shared component plus one of each rank's."""
    g = torch.Generator().manual_seed(seed)
    shared = torch.randn(n, generator=g, dtype=torch.float64)
    return [(shared + (0.5 + r) * torch.randn(n, generator=g, dtype=torch.float64)).to(dtype)
            for r in range(hvd.size())]


def check(out, inputs, what):
    assert out.dtype == inputs[0].dtype and out.shape == inputs[0].shape
    held = [t.double().numpy() for t in inputs]
    err = relative_error(out.double().numpy(), adasum(held), held)
    assert err < TOL[out.dtype], f"{what}: relative error {err:.2e}"


@pytest.mark.parametrize("dtype", list(TOL), ids=name_of)
def test_every_allreduce_form(dtype):
    power_of_two_world()
    me, tag = hvd.rank(), name_of(dtype)
    inputs = rank_tensors(dtype, 37)
    check(hvd.allreduce(inputs[me], op=hvd.Adasum, name=f"tada.{tag}"), inputs, "allreduce")
    check(hvd.synchronize(hvd.allreduce_async(inputs[me], op=hvd.Adasum,
                                              name=f"tada.async.{tag}")), inputs, "async")
    inplace = inputs[me].clone()
    assert hvd.allreduce_(inplace, op=hvd.Adasum, name=f"tada.inplace.{tag}") is inplace
    check(inplace, inputs, "allreduce_")
    inplace = inputs[me].clone()
    hvd.synchronize(hvd.allreduce_async_(inplace, op=hvd.Adasum, name=f"tada.async_.{tag}"))
    check(inplace, inputs, "allreduce_async_")


@pytest.mark.parametrize("dtype", list(TOL), ids=name_of)
def test_grouped_forms(dtype):
    power_of_two_world()
    me, tag = hvd.rank(), name_of(dtype)
    members = [rank_tensors(dtype, n, seed=n) for n in (1, 5, 300)]
    outs = hvd.grouped_allreduce([m[me] for m in members], op=hvd.Adasum,
                                 name=f"tada.group.{tag}")
    for m, out in zip(members, outs):
        check(out, m, "grouped_allreduce")
    inplace = [m[me].clone() for m in members]
    hvd.grouped_allreduce_(inplace, op=hvd.Adasum, name=f"tada.group_.{tag}")
    for m, out in zip(members, inplace):
        check(out, m, "grouped_allreduce_")


def test_non_contiguous_and_scaled():
    power_of_two_world()
    inputs = [t.reshape(6, 4) for t in rank_tensors(torch.float64, 24)]
    column = inputs[hvd.rank()].t()  # non-contiguous
    out = hvd.allreduce(column, op=hvd.Adasum, name="tada.strided", prescale_factor=2.0,
                        postscale_factor=0.25)
    expected = adasum([t.t().numpy() * 2.0 for t in inputs]) * 0.25
    assert relative_error(out.numpy(), expected, [t.numpy() for t in inputs]) < 1e-12


def test_autograd_gradient_is_the_adasum_of_the_gradients():
    power_of_two_world()
    inputs = rank_tensors(torch.float64, 8, seed=1)
    weights = rank_tensors(torch.float64, 8, seed=2)
    x = inputs[hvd.rank()].clone().requires_grad_()
    (hvd.allreduce(x, op=hvd.Adasum, name="tada.grad.fwd") * weights[hvd.rank()]).sum() \
        .backward()
    check(x.grad, weights, "gradient")


def test_horovod_stand_in():
    power_of_two_world()
    horovod_torch = pytest.importorskip("horovod.torch")
    if getattr(horovod_torch, "allreduce_async", None) is not hvd.allreduce_async:
        pytest.skip("a real Horovod is installed")
    inputs = rank_tensors(torch.float32, 11)
    handle = horovod_torch.allreduce_async(inputs[hvd.rank()], op=horovod_torch.Adasum,
                                           name="tada.horovod")
    check(horovod_torch.synchronize(handle), inputs, "horovod.torch.allreduce_async")


def test_non_power_of_two_fails_on_every_rank():
    if is_power_of_two(hvd.size()):
        pytest.skip("needs a number of ranks that is not a power of two")
    with pytest.raises(NotImplementedError, match="power-of-two"):
        hvd.allreduce(torch.ones(3), op=hvd.Adasum, name="tada.npot")
    with pytest.raises(NotImplementedError, match="power-of-two"):
        hvd.grouped_allreduce([torch.ones(3), torch.ones(1)], op=hvd.Adasum,
                              name="tada.npot.group")
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum, name="tada.npot.after").item() == hvd.size()


# --- DistributedOptimizer(op=hvd.Adasum) -------------------------------------------------

OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


def reference(members, steps, passes, make_opt, dtype=torch.float64, last_passes=None):
    """Horovod's delta optimizer by hand: each member rank has its own model copy and
    optimizer state; every step each steps on its own batches from the common start,
    and the start moves by the Adasum of the members' parameter changes."""
    models = {r: make_model(dtype) for r in members}
    opts = {r: make_opt(models[r].parameters()) for r in members}
    for step in range(steps):
        start = [p.detach().clone() for p in models[members[0]].parameters()]
        deltas = {}
        for r in members:
            opts[r].zero_grad()
            for micro in range(last_passes if step == steps - 1 and last_passes else passes):
                loss_fn(models[r], *batch(step, r, dtype, micro)).backward()
            opts[r].step()
            deltas[r] = [(p.detach() - s).numpy() for p, s in zip(models[r].parameters(), start)]
        for i, s in enumerate(start):
            moved = s + torch.from_numpy(adasum([deltas[r][i] for r in members])).to(dtype)
            for r in members:
                list(models[r].parameters())[i].data.copy_(moved)
    return models[members[0]]


def distributed(steps, passes, make_opt, dtype=torch.float64, last_passes=None, **kwargs):
    model = make_model(dtype)
    opt = hvd.DistributedOptimizer(make_opt(model.parameters()), model.named_parameters(),
                                   backward_passes_per_step=passes, op=hvd.Adasum, **kwargs)
    for step in range(steps):
        opt.zero_grad()
        for micro in range(last_passes if step == steps - 1 and last_passes else passes):
            loss_fn(model, *batch(step, hvd.rank(), dtype, micro)).backward()
        opt.step()
    return model, opt


@pytest.mark.parametrize("passes", [1, 2])
@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def test_optimizer_matches_the_delta_optimizer_by_hand(kind, passes):
    power_of_two_world()
    model, _ = distributed(3, passes, OPTIMIZERS[kind])
    expected = reference(list(range(hvd.size())), 3, passes, OPTIMIZERS[kind])
    assert torch.allclose(params_of(model), params_of(expected), rtol=1e-9, atol=1e-12)
    assert_same_on_every_rank(params_of(model), f"tada.opt.same.{kind}.{passes}")


def test_set_backward_passes_per_step():
    power_of_two_world()
    model = make_model()
    opt = hvd.DistributedOptimizer(OPTIMIZERS["sgd"](model.parameters()),
                                   model.named_parameters(), op=hvd.Adasum)
    opt.set_backward_passes_per_step(2)
    for micro in range(2):  # with 1 pass per step, the second would be refused
        loss_fn(model, *batch(0, hvd.rank(), micro=micro)).backward()
    opt.step()
    expected = reference(list(range(hvd.size())), 1, 2, OPTIMIZERS["sgd"])
    assert torch.allclose(params_of(model), params_of(expected), rtol=1e-9, atol=1e-12)


def test_step_before_the_last_backward_pass_reduces_what_there_is():
    power_of_two_world()
    # backward_passes_per_step=3 but the last step has one pass: step() runs the local
    # step and the reduction of the hooks that did not fire.
    model, _ = distributed(2, 3, OPTIMIZERS["sgd"], last_passes=1)
    expected = reference(list(range(hvd.size())), 2, 3, OPTIMIZERS["sgd"], last_passes=1)
    assert torch.allclose(params_of(model), params_of(expected), rtol=1e-9, atol=1e-12)


def test_fp16_compression_close_to_the_reference():
    power_of_two_world()
    model, _ = distributed(2, 1, OPTIMIZERS["sgd"], dtype=torch.float32,
                           compression=hvd.Compression.fp16)
    expected = reference(list(range(hvd.size())), 2, 1, OPTIMIZERS["sgd"], torch.float32)
    assert torch.allclose(params_of(model), params_of(expected), rtol=1e-2, atol=1e-3)
    assert_same_on_every_rank(params_of(model), "tada.opt.same.fp16")


def test_parameter_without_gradient_stays():
    power_of_two_world()
    model = make_model()
    extra = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    named = list(model.named_parameters()) + [("extra", extra)]
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in named], lr=0.1), named,
                                   op=hvd.Adasum)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    opt.step()  # "extra" got no gradient: its delta is zero on every rank
    assert torch.equal(extra.detach(), torch.ones(3, dtype=torch.float64))
    assert_same_on_every_rank(params_of(model), "tada.opt.nograd")


def test_synchronize_does_nothing_and_skip_synchronize_is_refused():
    power_of_two_world()
    if hvd.size() == 1:
        pytest.skip("one rank: the wrapped optimizer as it is")
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), op=hvd.Adasum)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    opt.synchronize()
    with pytest.raises(AssertionError, match="Adasum"):
        with opt.skip_synchronize():
            pass
    with pytest.raises(AssertionError):
        opt.zero_grad()  # the deltas are still being reduced
    with pytest.raises(AssertionError):
        loss_fn(model, *batch(1, hvd.rank())).backward()  # a second pass before step()
    opt.step()
    assert_same_on_every_rank(params_of(model), "tada.opt.sync")


def test_one_rank_gets_the_wrapped_optimizer():
    if hvd.size() != 1:
        pytest.skip("one rank only")
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), op=hvd.Adasum)
    assert not hasattr(opt, "_starts") and not opt._grad_accs
    loss_fn(model, *batch(0, 0)).backward()
    opt.step()
    expected = reference([0], 1, 1, lambda params: torch.optim.SGD(params, lr=0.1))
    assert torch.allclose(params_of(model), params_of(expected), rtol=1e-12)


def test_arguments_that_do_not_apply_are_refused():
    model = make_model()
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 model.named_parameters(), op=hvd.Adasum,
                                 gradient_predivide_factor=2.0)
    if hvd.size() > 1:
        with pytest.raises(ValueError, match="gradient_as_bucket_view"):
            hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                     model.named_parameters(), op=hvd.Adasum,
                                     gradient_as_bucket_view=True)


def test_optimizer_on_a_power_of_two_process_set():
    with power_of_two_set(hvd) as (members, ps):
        model, _ = distributed(2, 1, OPTIMIZERS["sgd"], process_set=ps)
        # Outside the set a rank trains alone, as with the other ops.
        expected = reference(members if hvd.rank() in members else [hvd.rank()], 2, 1,
                             OPTIMIZERS["sgd"])
        assert torch.allclose(params_of(model), params_of(expected), rtol=1e-9, atol=1e-12)
        hvd.barrier()


def test_optimizer_on_a_non_power_of_two_set_fails_on_every_rank():
    if is_power_of_two(hvd.size()):
        pytest.skip("needs a number of ranks that is not a power of two")
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), op=hvd.Adasum)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    with pytest.raises(NotImplementedError, match="power-of-two"):
        opt.step()
    # Every reduction was waited for and the parameters are back where they started.
    assert not opt._handles and torch.equal(params_of(model), params_of(make_model()))
