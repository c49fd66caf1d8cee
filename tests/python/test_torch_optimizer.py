"""DistributedOptimizer against a single-process reference trained on the union of
every rank's batches; broadcasting parameters and optimizer state; join."""
import pytest

torch = pytest.importorskip("torch")
import hvd.torch as hvd  # noqa: E402
from conftest import unsupported_skips  # noqa: E402

pytestmark = pytest.mark.usefixtures("world")

BATCH = 4


def make_model(dtype=torch.float64):
    torch.manual_seed(1234)  # the same start on every rank and for the reference
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 1)).to(dtype)


def batch(step, rank, dtype=torch.float64, micro=0):
    g = torch.Generator().manual_seed(1000 * step + 10 * rank + micro)
    x = torch.randn(BATCH, 5, generator=g).to(dtype)
    return x, x.sum(1, keepdim=True).sin()


def loss_fn(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def params_of(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def assert_same_on_every_rank(vector, name):
    root = hvd.broadcast(vector, 0, name=name)
    assert torch.equal(vector, root), f"parameters differ from rank 0's ({name})"


def train(steps=4, passes=1, op=hvd.Average, dtype=torch.float64, **kwargs):
    """Distributed training and its single-process reference; returns both models."""
    model, reference = make_model(dtype), make_model(dtype)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   model.named_parameters(), backward_passes_per_step=passes,
                                   op=op, **kwargs)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        opt.zero_grad()
        for micro in range(passes):
            loss_fn(model, *batch(step, hvd.rank(), dtype, micro)).backward()
        opt.step()

        ref_opt.zero_grad()
        for micro in range(passes):
            # The mean over the union of equal batches is the mean of the rank means;
            # Sum adds the rank means instead.
            losses = [loss_fn(reference, *batch(step, r, dtype, micro))
                      for r in range(hvd.size())]
            total = sum(losses) / (hvd.size() if op == hvd.Average else 1)
            total.backward()
        ref_opt.step()
    return model, reference


@pytest.mark.parametrize("variant", ["plain", "predivide", "groups2", "group_lists", "sum"])
def test_matches_single_process_on_the_union_of_batches(variant):
    kwargs = {"plain": {}, "predivide": {"gradient_predivide_factor": 2.0},
              "groups2": {"groups": 2}, "group_lists": {}, "sum": {"op": hvd.Sum}}[variant]
    if variant == "group_lists":
        model, reference = make_model(), make_model()
        model_params = list(model.parameters())
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       model.named_parameters(),
                                       groups=[model_params[:2], model_params[2:3]])
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        for step in range(3):
            opt.zero_grad()
            loss_fn(model, *batch(step, hvd.rank())).backward()
            opt.step()
            ref_opt.zero_grad()
            (sum(loss_fn(reference, *batch(step, r)) for r in range(hvd.size()))
             / hvd.size()).backward()
            ref_opt.step()
    else:
        model, reference = train(**kwargs)
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-9, atol=1e-12)
    assert_same_on_every_rank(params_of(model), f"opt.same.{variant}")


def test_backward_passes_per_step_2():
    model, reference = train(passes=2)
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-9, atol=1e-12)
    assert_same_on_every_rank(params_of(model), "opt.same.bpps2")


def test_too_many_backward_passes_is_reported():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), backward_passes_per_step=1)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    with pytest.raises(AssertionError):
        loss_fn(model, *batch(1, hvd.rank())).backward()
    opt.synchronize()  # completes the reduction that the first pass started
    with opt.skip_synchronize():
        opt.step()


@pytest.mark.parametrize("bucket_views", [False, True])
def test_zero_grad_between_accumulated_passes_is_refused(bucket_views):
    # As Horovod: gradients counted towards a reduction (here the first of two
    # accumulated passes) are not dropped by zero_grad() before step().
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), backward_passes_per_step=2,
                                   gradient_as_bucket_view=bucket_views)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    if hvd.size() > 1:
        with pytest.raises(AssertionError, match="zero_grad"):
            opt.zero_grad()
    loss_fn(model, *batch(0, hvd.rank(), micro=1)).backward()
    opt.step()
    opt.zero_grad()
    assert_same_on_every_rank(params_of(model), f"opt.same.zero_grad.{bucket_views}")


def test_fp16_compression_close_to_reference():
    model, reference = train(dtype=torch.float32, compression=hvd.Compression.fp16)
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-2, atol=1e-3)
    assert_same_on_every_rank(params_of(model), "opt.same.fp16")


def synchronized_optimizer():
    """A model and its DistributedOptimizer after one backward pass and synchronize()."""
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters())
    loss_fn(model, *batch(0, hvd.rank())).backward()
    opt.synchronize()
    return model, opt


def test_synchronize_then_clip_inside_skip_synchronize():
    model, opt = synchronized_optimizer()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)
    with opt.skip_synchronize():
        opt.step()
    assert_same_on_every_rank(params_of(model), "opt.same.clip")
    with pytest.raises(AssertionError):
        loss_fn(model, *batch(1, hvd.rank())).backward()
        opt.zero_grad()  # gradients still in flight
    opt.synchronize()


def test_unused_parameters_still_reduced():
    model = make_model()
    extra = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    named = list(model.named_parameters()) + [("extra", extra)]
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in named], lr=0.1), named)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    opt.step()  # "extra" got no gradient: it is reduced as zeros, not waited for forever
    assert torch.equal(extra.detach(), torch.zeros(3, dtype=torch.float64))


def test_named_parameters_are_checked():
    model = make_model()
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 [("same", p) for p in model.parameters()])
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 list(model.named_parameters())[:1])


def test_broadcast_parameters_from_root():
    torch.manual_seed(hvd.rank())
    model = torch.nn.Linear(3, 2)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    assert_same_on_every_rank(params_of(model), "bp.state_dict")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(hvd.rank())
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=hvd.size() - 1)
    assert_same_on_every_rank(params_of(model), "bp.named")


def test_broadcast_optimizer_state_after_a_step_of_adam():
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (hvd.rank() + 1))
    loss_fn(model, *batch(0, hvd.rank())).backward()
    opt.step()  # different data per rank: different moments
    root_state = hvd.broadcast_object(opt.state_dict(), root_rank=0, name="adam.root")
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    mine = opt.state_dict()
    assert mine["param_groups"][0]["lr"] == pytest.approx(0.01)
    for index, state in root_state["state"].items():
        for key, value in state.items():
            assert torch.equal(torch.as_tensor(mine["state"][index][key]),
                               torch.as_tensor(value)), key


def test_broadcast_optimizer_state_to_ranks_that_never_stepped():
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    if hvd.rank() == 0:
        loss_fn(model, *batch(0, 0)).backward()
        opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert len(opt.state_dict()["state"]) == len(list(model.parameters()))
    step = opt.state_dict()["state"][0]["step"]
    assert float(step) == 1.0


def test_join_with_uneven_batches():
    with unsupported_skips():
        hvd.join()  # every rank finds out together whether join is available
    model, reference = make_model(), make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters())
    batches = 2 + hvd.rank()  # the last rank has the most
    for step in range(batches):
        opt.zero_grad()
        loss_fn(model, *batch(step, hvd.rank())).backward()
        opt.step()
    last = hvd.join()
    assert last == hvd.size() - 1
    # Reference for the last rank: joined ranks contribute zeros, Average still divides
    # by the full size.
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(2 + hvd.size() - 1):
        ref_opt.zero_grad()
        active = [r for r in range(hvd.size()) if step < 2 + r]
        (sum(loss_fn(reference, *batch(step, r)) for r in active) / hvd.size()).backward()
        ref_opt.step()
    hvd.broadcast_parameters(model.state_dict(), root_rank=last)
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-9, atol=1e-12)


def test_hooks_start_reductions_during_backward():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters())
    loss_fn(model, *batch(0, hvd.rank())).backward()
    # Before step(): every gradient already has an allreduce in flight or done.
    started = [opt._handles.get(p, (None,))[0] for p in model.parameters()]
    assert all(h is not None for h in started)
    opt.step()
    assert not opt._handles


def test_step_after_synchronize_warns_in_horovod_words():
    _, opt = synchronized_optimizer()
    with pytest.warns(UserWarning) as record:
        opt.step()
    assert len(record) == 1
    assert "optimizer.step() called without optimizer.skip_synchronize()" in str(
        record[0].message)


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_gradients_are_reduced(sparse_as_dense):
    torch.manual_seed(5)
    embedding = torch.nn.Embedding(10, 3, sparse=True).double()
    reference = torch.nn.Embedding(10, 3, sparse=True).double()
    reference.load_state_dict(embedding.state_dict())
    opt = hvd.DistributedOptimizer(torch.optim.SGD(embedding.parameters(), lr=0.5),
                                   embedding.named_parameters(),
                                   sparse_as_dense=sparse_as_dense)
    rows = {r: torch.tensor([r % 10, (2 * r + 3) % 10, 4]) for r in range(hvd.size())}
    embedding(rows[hvd.rank()]).sum().backward()
    assert embedding.weight.grad.is_sparse
    opt.step()
    assert embedding.weight.grad.is_sparse  # SparseAdam and friends still get sparse grads
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    (sum(reference(rows[r]).sum() for r in range(hvd.size())) / hvd.size()).backward()
    ref_opt.step()
    assert torch.allclose(embedding.weight, reference.weight, atol=1e-12)


def test_sparse_adam_trains_through_the_optimizer():
    embedding = torch.nn.Embedding(6, 2, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SparseAdam(list(embedding.parameters()), lr=0.1))
    embedding(torch.tensor([hvd.rank() % 6, 5])).sum().backward()
    opt.step()
    hvd.broadcast_parameters(embedding.state_dict(), root_rank=0)


def test_broadcast_optimizer_state_with_parameters_without_grad():
    class Picker(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.index = torch.nn.Parameter(torch.tensor([1, 3]).int(), requires_grad=False)
            self.values = torch.nn.Parameter(torch.rand(4))

        def forward(self, x):
            return self.values[self.index.long()] * x

    model = Picker()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True),
        model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert model.index.grad is None  # not trainable: left alone
    assert torch.equal(model.values.grad, torch.zeros(4))  # filled as Horovod does
    model(torch.ones(2)).sum().backward()
    opt.step()
    assert_same_on_every_rank(model.values.detach(), "opt.nograd.values")


def test_ranks_outside_the_optimizer_process_set_train_locally():
    members = [0] if hvd.size() == 2 else list(range(hvd.size() - 1))
    ps = hvd.add_process_set(members)
    try:
        model = make_model()
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       model.named_parameters(), process_set=ps)
        inside = hvd.rank() in members
        assert bool(opt._grad_accs) == inside  # hooks only inside the set
        before = params_of(model)
        loss_fn(model, *batch(0, hvd.rank())).backward()
        opt.step()  # outside the set: a local step, no collective, no error
        assert not torch.equal(params_of(model), before)
        hvd.barrier()
    finally:
        hvd.remove_process_set(ps)


@pytest.mark.parametrize("op", [hvd.Average, hvd.Sum])
def test_bucket_views_train_as_separate_gradients(op):
    model, reference = train(op=op, gradient_as_bucket_view=True)
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-9, atol=1e-12)
    assert_same_on_every_rank(params_of(model), f"opt.same.bucket.{op}")


def test_bucket_views_follow_the_order_gradients_become_ready():
    # `early` is registered first but runs last in forward, so backward completes its
    # gradients first, where reverse registration order puts them last. After the
    # first step the buffer follows what backward did.
    torch.manual_seed(7)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.early = torch.nn.Linear(3, 2)  # registered first, used last
            self.late = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.early(torch.relu(self.late(x)))

    if hvd.size() == 1:
        pytest.skip("a one-rank job registers no hooks and needs no buffers")
    model = Net()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    reference = Net()
    reference.load_state_dict(model.state_dict())
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), gradient_as_bucket_view=True)
    ref_opt = hvd.DistributedOptimizer(torch.optim.SGD(reference.parameters(), lr=0.1),
                                       [("ref." + n, p) for n, p in reference.named_parameters()])

    def at(p):
        return p.grad.data_ptr()
    # Before any step: reverse registration order (late's, then early's).
    assert at(model.late.bias) < at(model.early.weight)
    for step in range(3):
        x = torch.full((2, 4), float(hvd.rank() + step + 1))
        for m, o in ((model, opt), (reference, ref_opt)):
            o.zero_grad()
            m(x).sum().backward()
            o.step()
        # After the first step: early's gradients (ready first) lie before late's.
        assert max(at(model.early.weight), at(model.early.bias)) < min(
            at(model.late.weight), at(model.late.bias))
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-6)
    assert_same_on_every_rank(params_of(model), "opt.same.bucket.order")


def test_bucket_views_are_one_buffer_and_stay_across_zero_grad():
    model = make_model(torch.float32)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), gradient_as_bucket_view=True)
    params = list(model.parameters())
    if hvd.size() == 1:
        pytest.skip("a one-rank job registers no hooks and needs no buffers")

    def storages():
        # untyped_storage() from torch 2.0; storage() before it
        return {getattr(p.grad, "untyped_storage", p.grad.storage)().data_ptr() for p in params}

    assert len(storages()) == 1
    for step in range(2):
        opt.zero_grad()  # set_to_none by default in torch 2: the views must stay
        assert len(storages()) == 1
        assert all(float(p.grad.abs().sum()) == 0 for p in params)
        loss_fn(model, *batch(step, hvd.rank(), torch.float32)).backward()
        opt.step()
        assert len(storages()) == 1
    # A gradient dropped by the module comes back into its view at the next reduction.
    model.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in params)
    loss_fn(model, *batch(5, hvd.rank(), torch.float32)).backward()
    opt.step()
    assert len(storages()) == 1
    assert_same_on_every_rank(params_of(model), "opt.same.bucket.views")


@pytest.mark.parametrize("numel,dtype", [(10, torch.float32), (300_000, torch.float32),
                                         (700_000, torch.float16), (1_000_003, torch.float64)])
def test_zeros_in_huge_pages(numel, dtype):
    from hvd.torch.host_memory import zeros_in_huge_pages
    flat = zeros_in_huge_pages(numel, dtype)
    assert flat.shape == (numel,) and flat.dtype == dtype and flat.is_contiguous()
    assert not flat.any()
    if numel * flat.element_size() >= 1 << 20:  # from 1 MiB up: on a huge page boundary
        assert flat.data_ptr() % (2 << 20) == 0
    flat += 1  # writable to its last element
    assert float(flat[-1]) == 1


def test_large_bucket_views_start_on_a_huge_page():
    # A CPU gradient buffer of 1 MiB or more starts on a 2 MiB boundary, advised for huge
    # pages (MPI copies them between a machine's ranks faster), and reduces as any other.
    torch.manual_seed(1234)
    model = torch.nn.Linear(1024, 512)  # 2 MiB of float32 weights
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   model.named_parameters(), gradient_as_bucket_view=True)
    if hvd.size() == 1:
        pytest.skip("a one-rank job registers no hooks and needs no buffers")
    model(torch.full((2, 1024), float(hvd.rank() + 1))).sum().backward()
    opt.synchronize()
    assert min(p.grad.data_ptr() for p in model.parameters()) % (2 << 20) == 0
    # d(sum)/dW = the batch's column sums, 2 (rank + 1); averaged over the ranks: size + 1.
    assert torch.equal(model.weight.grad, torch.full_like(model.weight.grad, hvd.size() + 1.0))
    assert torch.equal(model.bias.grad, torch.full_like(model.bias.grad, 2.0))


# Bucket views reduce a bucket of gradients at a time (bucket_cap_mb). A cap below one
# parameter's size makes one bucket per parameter; 1e-4 MB (104 bytes) puts the test
# model's 4 x 5 weight in a bucket of its own and the small ones together.
@pytest.mark.parametrize("cap", [25, 1e-4, 1e-9])
@pytest.mark.parametrize("op", [hvd.Average, hvd.Sum])
def test_buckets_of_any_size_train_as_separate_gradients(cap, op):
    model, reference = train(op=op, gradient_as_bucket_view=True, bucket_cap_mb=cap)
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-9, atol=1e-12)
    assert_same_on_every_rank(params_of(model), f"opt.same.buckets.{cap}.{op}")


def test_buckets_with_predivide_and_two_backward_passes():
    model, reference = train(passes=2, gradient_as_bucket_view=True, bucket_cap_mb=1e-4,
                             gradient_predivide_factor=2.0)
    assert torch.allclose(params_of(model), params_of(reference), rtol=1e-9, atol=1e-12)
    assert_same_on_every_rank(params_of(model), "opt.same.buckets.bpps2")


def bucket_optimizer(model, cap=25, passes=1):
    return hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                    model.named_parameters(), gradient_as_bucket_view=True,
                                    bucket_cap_mb=cap, backward_passes_per_step=passes)


def test_one_allreduce_per_bucket_started_during_backward():
    if hvd.size() == 1:
        pytest.skip("a one-rank job registers no hooks and needs no buffers")
    model = make_model()
    opt = bucket_optimizer(model)
    assert len(opt._push_buckets) == 1  # the whole model under 25 MB
    loss_fn(model, *batch(0, hvd.rank())).backward()
    assert opt._push_buckets[0].handle is not None  # started by the last gradient's hook
    assert not opt._handles  # and no allreduce per gradient
    opt.step()
    assert opt._push_buckets[0].handle is None
    small = bucket_optimizer(make_model(), cap=1e-9)
    assert len(small._push_buckets) == len(list(model.parameters()))


def test_buckets_report_too_many_backward_passes():
    if hvd.size() == 1:
        pytest.skip("a one-rank job registers no hooks")
    model = make_model()
    opt = bucket_optimizer(model)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    with pytest.raises(AssertionError, match="backward_passes_per_step"):
        loss_fn(model, *batch(1, hvd.rank())).backward()
    opt.synchronize()
    with opt.skip_synchronize():
        opt.step()


def test_buckets_reduce_unused_parameters_as_zeros():
    model = make_model()
    extra = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    named = list(model.named_parameters()) + [("extra", extra)]
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in named], lr=0.1), named,
                                   gradient_as_bucket_view=True, bucket_cap_mb=1e-4)
    for step in range(2):
        opt.zero_grad()
        loss_fn(model, *batch(step, hvd.rank())).backward()
        opt.step()  # the bucket waiting for "extra" starts at synchronize()
    assert torch.equal(extra.detach(), torch.zeros(3, dtype=torch.float64))
    assert_same_on_every_rank(params_of(model), "opt.same.buckets.unused")


def test_buckets_follow_rank_0s_order_when_ranks_differ():
    # Each rank runs the two branches in its own order, so backward completes their
    # gradients in different orders on different ranks. Buckets are reduced by name,
    # whatever they hold: every rank must take rank 0's layout, or unrelated gradients
    # would be summed together.
    if hvd.size() == 1:
        pytest.skip("a one-rank job registers no hooks and needs no buffers")
    torch.manual_seed(11)

    class TwoBranches(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(3, 3)
            self.b = torch.nn.Linear(3, 3)

        def forward(self, x):
            first, second = (self.a, self.b) if hvd.rank() % 2 == 0 else (self.b, self.a)
            return second(torch.tanh(first(x)))

    model = TwoBranches()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = bucket_optimizer(model, cap=1e-4)  # 48- and 12-byte gradients: several buckets
    for step in range(3):
        opt.zero_grad()
        model(torch.full((2, 3), float(hvd.rank() + step + 1))).sum().backward()
        opt.step()
    # One layout on every rank (offsets into the buffer, in parameter order) ...
    base = min(p.grad.data_ptr() for p in model.parameters())
    offsets = torch.tensor([p.grad.data_ptr() - base for p in model.parameters()])
    assert_same_on_every_rank(offsets, "opt.buckets.layout")
    # ... and the gradients of the last step are the averages of every rank's.
    grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    assert_same_on_every_rank(grads, "opt.buckets.grads")


@pytest.mark.parametrize("bucket_views", [False, True])
def test_ranks_with_different_gradients_fail_on_every_rank(bucket_views):
    # "extra" has another size on each rank: its allreduce (or its bucket's) fails on
    # every rank instead of hanging, every other reduction is still waited for, and
    # the optimizer is usable afterwards.
    if hvd.size() == 1:
        pytest.skip("a one-rank job registers no hooks")
    model = make_model()
    extra = torch.nn.Parameter(torch.zeros(7 + hvd.rank(), dtype=torch.float64))
    named = list(model.named_parameters()) + [("extra", extra)]
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in named], lr=0.1), named,
                                   gradient_as_bucket_view=bucket_views)
    loss_fn(model, *batch(0, hvd.rank())).backward()
    with pytest.raises(hvd.HvdError):
        opt.synchronize()
    opt.zero_grad()  # nothing left in flight
    hvd.barrier()
