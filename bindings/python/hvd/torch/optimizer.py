"""DistributedOptimizer: averages gradients over the ranks while backward runs.

A hook on each parameter's gradient accumulator (the AccumulateGrad node, which runs
once the parameter's gradient for this backward pass is complete) starts an async
in-place allreduce of that gradient at once, so communication overlaps the rest of the
backward pass. step() (or synchronize()) waits for all of them and then applies the
wrapped optimizer's update.

With op=Adasum the same hook runs the wrapped optimizer on that parameter's local
gradient and reduces the change it made instead (_DistributedAdasumOptimizer).
"""
import collections
import os
import warnings
from contextlib import contextmanager

import torch

from ..basics import Adasum, Average
from .compression import Compression
from .host_memory import zeros_in_huge_pages
from ..basics import mark_step, process_set_included, size
from ..errors import HvdError, NotInitializedError
from .mpi_ops import (allreduce_async_, broadcast_, grouped_allreduce_async_,
                      sparse_allreduce_async, synchronize)


class _DistributedOptimizer(torch.optim.Optimizer):
    # The methods below are copied into a subclass of the user's optimizer class (see
    # DistributedOptimizer), so `super(self.__class__, self)` is that optimizer.

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set,
                 gradient_as_bucket_view=False, bucket_cap_mb=25):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self.backward_passes_per_step = int(backward_passes_per_step)
        if self.backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be 1 or more")
        self.op = op
        self.gradient_predivide_factor = float(gradient_predivide_factor)
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        self._parameter_names = self._name_parameters(named_parameters)
        # The allreduce's name per parameter, made once (a hook runs per gradient).
        self._reduce_names = {p: f"allreduce.{n}" for p, n in self._parameter_names.items()}
        self._groups = self._make_groups(groups)
        self._group_of = {p: g for g, members in enumerate(self._groups) for p in members}
        self._group_launched = set()
        self._grad_accs = []
        # Per hooked parameter, the state its hook keeps (_Slot: backward passes left,
        # the reduction in flight, its bucket view), held by the hook's closure so that
        # a gradient's hook hashes no tensor; in registration order.
        self._slots = {}
        self._slot_list = []
        # A backward pass counted gradients since the last synchronize(): zero_grad()
        # now would drop them (accumulated or being reduced), as Horovod refuses it.
        self._unsynchronized = False
        self._prescale, self._postscale = self._scale()
        # The common case goes straight to allreduce_async_ from the hook.
        self._plain = compression is Compression.none and op != Adasum
        self._synchronized = False
        self._should_synchronize = True
        # As Horovod: a rank outside the process set trains locally, and a job of one
        # rank has nothing to reduce; neither registers hooks.
        self._hooked = process_set_included(process_set) and (
            size() > 1 or os.environ.get("HOROVOD_ELASTIC") == "1")
        # Flat gradient buffers (one per dtype and device) whose views are the
        # parameters' .grad: libhvd then reduces a whole step's gradients where they
        # are, without fusion copies (see _make_bucket_views).
        self._buckets = []
        # The order in which the first step's gradients became ready: the buffers are
        # laid out again in that order after it, as DDP rebuilds its buckets (None:
        # not recording).
        self._ready_order = None
        # With bucket views, plain dense gradients are reduced a bucket at a time, as
        # DDP does: consecutive gradients of a flat buffer, up to bucket_cap_mb, in one
        # allreduce started once the last of them is ready (_Bucket). Groups and
        # compression keep one allreduce per gradient.
        if not float(bucket_cap_mb) > 0:
            raise ValueError(f"bucket_cap_mb must be a positive number, not {bucket_cap_mb!r}")
        self._bucket_cap_bytes = max(1, int(float(bucket_cap_mb) * 2**20))
        self._push_buckets = []  # _Bucket, in buffer order
        self._layouts = 0  # buffer layouts made; part of the buckets' names
        self._pushes_buckets = (gradient_as_bucket_view and not self._groups
                                and compression is Compression.none)
        if self._hooked:
            self._register_hooks()
            if gradient_as_bucket_view:
                self._make_bucket_views(
                    [p for p in reversed(self._all_params()) if p.requires_grad])
                self._ready_order = []

    # --- set-up -------------------------------------------------------------------

    def set_backward_passes_per_step(self, passes):
        """Changes the number of local backward passes per reduction (between steps)."""
        self.backward_passes_per_step = int(passes)
        for slot in self._slot_list:
            slot.passes_left = self.backward_passes_per_step

    def _all_params(self):
        return [p for group in self.param_groups for p in group["params"]]

    def _name_parameters(self, named_parameters):
        params = self._all_params()
        if named_parameters is None:
            return {p: f"noname.{i}" for i, p in enumerate(params)}
        named = list(named_parameters)
        if any(not isinstance(item, tuple) or len(item) != 2 for item in named):
            raise ValueError("named_parameters must be a sequence of (name, parameter) tuples, "
                             "as model.named_parameters() gives")
        counts = collections.Counter(n for n, _ in named)
        dups = sorted(n for n, c in counts.items() if c > 1)
        if dups:
            raise ValueError(f"named_parameters has duplicate names: {', '.join(dups)}")
        by_param = {p: n for n, p in named}
        unnamed = [i for i, p in enumerate(params) if p not in by_param]
        if unnamed:
            raise ValueError("named_parameters was given but does not name every parameter "
                             f"of the optimizer (parameter indices {unnamed}); pass "
                             "model.named_parameters() of the model the optimizer trains")
        return {p: by_param[p] for p in params}

    def _make_groups(self, groups):
        trainable = [p for p in self._all_params() if p.requires_grad]
        if groups is None or groups == 0:
            return []
        if isinstance(groups, int):
            if groups < 0:
                raise ValueError("groups must be a non-negative number or a list of lists")
            n = min(groups, len(trainable))
            return [trainable[i * len(trainable) // n:(i + 1) * len(trainable) // n]
                    for i in range(n)]
        out, seen = [], set()
        for members in groups:
            members = [p for p in members if p.requires_grad]
            for p in members:
                if p not in self._parameter_names:
                    raise ValueError("groups holds a tensor that the optimizer does not train")
                if p in seen:
                    raise ValueError("a parameter appears in more than one group")
                seen.add(p)
            if members:
                out.append(members)
        return out

    def _register_hooks(self):
        for p in self._all_params():
            if not p.requires_grad:
                continue
            # expand_as gives a view whose grad_fn leads to p's AccumulateGrad node; a
            # hook on that node runs after p.grad holds this pass's gradient.
            grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
            grad_acc.register_hook(self._make_hook(p))
            self._grad_accs.append(grad_acc)

    def _make_hook(self, p):
        # Runs once per gradient per backward pass: each lookup here is paid a thousand
        # times a step by a model of a thousand tensors, so its state is in the slot
        # the closure holds (no tensor is hashed) and the plain case calls
        # allreduce_async_ itself.
        slot = _Slot(p, self.backward_passes_per_step, self._reduce_names[p],
                     self._group_of.get(p))
        self._slots[p] = slot
        self._slot_list.append(slot)

        def hook(*_):
            left = slot.passes_left
            if left <= 0:
                raise AssertionError(
                    "gradients were computed more than backward_passes_per_step times "
                    "before step(); raise backward_passes_per_step to accumulate "
                    "gradients locally")
            if self._ready_order is not None and left == self.backward_passes_per_step:
                self._ready_order.append(p)  # ready in the first step, in this order
            slot.passes_left = left - 1
            self._unsynchronized = True
            if left != 1:
                return
            if self._pushes_buckets:
                # Count p into its bucket; the last one starts the bucket's allreduce.
                bucket = slot.bucket
                bucket.waiting -= 1
                if bucket.waiting == 0:
                    self._launch_bucket(bucket)
            elif slot.group is not None:
                self._maybe_launch_group(slot.group)
            else:
                grad = p.grad
                if (self._plain and slot.view is None and grad is not None
                        and not grad.is_sparse):
                    slot.handle = allreduce_async_(
                        grad, name=slot.name, op=self.op, prescale_factor=self._prescale,
                        postscale_factor=self._postscale, process_set=self.process_set)
                else:
                    slot.handle, slot.write_back = self._allreduce_grad_async(p)
        return hook

    @property
    def _handles(self):
        """The reductions in flight, per parameter: (handle, write_back) (read-only;
        groups share a handle, buckets are not here)."""
        return {s.param: (s.handle, s.write_back) for s in self._slot_list
                if s.handle is not None}

    def _launch_bucket(self, bucket):
        for slot in bucket.slots:
            slot.attach()  # a .grad dropped or replaced since
        bucket.handle = allreduce_async_(bucket.flat, name=bucket.name, op=self.op,
                                         prescale_factor=self._prescale,
                                         postscale_factor=self._postscale,
                                         process_set=self.process_set)

    def _make_bucket_views(self, order):
        # Laid out in the given order: first reverse registration order, the order in
        # which a backward pass usually completes gradients, then the order the first
        # step showed (_relayout_bucket_views), so that the gradients of one fused batch
        # lie back to back. Autograd accumulates into a .grad that exists, in place.
        by_buffer = {}
        for p in order:
            by_buffer.setdefault((p.dtype, p.device), []).append(p)
        self._buckets = []
        self._push_buckets = []
        for (dtype, device), params in by_buffer.items():
            numel = sum(p.numel() for p in params)
            if device.type == "cpu":
                # MPI moves it between the ranks of a machine faster from huge pages.
                flat = zeros_in_huge_pages(numel, dtype)
            else:
                flat = torch.zeros(numel, dtype=dtype, device=device)
            offset = 0
            bucket = None
            for p in params:
                view = flat[offset:offset + p.numel()].view(p.shape)
                if p.grad is not None:
                    view.copy_(p.grad)
                p.grad = view
                slot = self._slots[p]
                slot.view = view
                if bucket is None or bucket.bytes(offset + p.numel()) > self._bucket_cap_bytes:
                    if bucket is not None:
                        bucket.close(flat, offset)
                    bucket = _Bucket(f"allreduce.bucket.{self._layouts}.{len(self._push_buckets)}",
                                     offset, flat.element_size())
                    self._push_buckets.append(bucket)
                bucket.slots.append(slot)
                slot.bucket = bucket
                offset += p.numel()
            if bucket is not None:
                bucket.close(flat, offset)
            self._buckets.append(flat)
        self._layouts += 1

    def _relayout_bucket_views(self):
        """After the first step: the buffers again, in the order its gradients became
        ready (parameters that got none keep their relative order, after them), holding
        the reduced gradients. Once; a layout that already matches is kept. Buckets
        are reduced under one name whatever they hold, so every rank must lay them out
        alike: rank 0's order is the one (a backward pass can complete gradients in
        another order on another rank)."""
        observed, self._ready_order = self._ready_order, None
        current = [s.param for s in sorted((s for s in self._slot_list if s.view is not None),
                                           key=lambda s: s.view.data_ptr())]
        seen = set(observed)
        order = observed + [p for p in current if p not in seen]
        if self._pushes_buckets:
            order = self._rank0_order(order, current)
        elif not observed:
            return
        if any(a is not b for a, b in zip(order, current)):  # tensors: compare identity
            self._make_bucket_views(order)

    def _rank0_order(self, order, current):
        position = {p: i for i, p in enumerate(current)}
        indices = torch.tensor([position[p] for p in order], dtype=torch.int64)
        # A rank whose model has other parameters fails here, on every rank, with the
        # broadcast's shape mismatch, rather than reducing unrelated gradients together.
        broadcast_(indices, 0, name=f"allreduce.bucket.layout.{self._layouts}",
                   process_set=self.process_set)
        return [current[i] for i in indices.tolist()]

    def _attach_bucket_view(self, p):
        # A .grad set to None (module.zero_grad()) or replaced comes back into its view.
        slot = self._slots.get(p)
        if slot is not None and slot.view is not None:
            slot.attach()

    # --- communication ----------------------------------------------------------------

    def _scale(self):
        if self.op == Average and self.gradient_predivide_factor != 1.0:
            # Average divides by the set size after postscale: sum/f * f/size.
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _dense_grad(self, p):
        """The dense tensor to reduce in place for p's gradient, and the callable that
        puts the reduced values back into p.grad (None where the tensor is p.grad
        itself). A sparse gradient (sparse_as_dense,
        or a member of a group) is reduced densely and stored back as sparse, as the
        optimizers that take sparse gradients (SparseAdam) expect."""
        if self._buckets:
            self._attach_bucket_view(p)
        grad = p.grad
        if grad is None:
            # Another rank may have a gradient for it (a branch this rank skipped).
            grad = p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
        sparse = grad.is_sparse
        if not sparse and self._compression is Compression.none:
            return grad, None  # reduced in place: nothing to write back
        compressed, ctx = self._compression.compress(p.grad.to_dense() if sparse else p.grad)

        def write_back(_):
            if sparse:
                reduced = self._compression.decompress(compressed, ctx).to_sparse()
                p.grad.zero_().add_(reduced)
            elif compressed is not p.grad:
                p.grad.copy_(self._compression.decompress(compressed, ctx))
        return compressed, write_back

    def _allreduce_grad_async(self, p):
        name = self._reduce_names[p]
        grad = p.grad
        if grad is not None and grad.is_sparse and not self.sparse_as_dense:
            # Horovod's way: allgather the indices and values of every rank.
            handle = sparse_allreduce_async(p.grad, name=name, op=self.op,
                                            process_set=self.process_set)
            return handle, lambda reduced: p.grad.zero_().add_(reduced)
        compressed, write_back = self._dense_grad(p)
        prescale, postscale = self._scale()
        handle = allreduce_async_(compressed, name=name, op=self.op, prescale_factor=prescale,
                                  postscale_factor=postscale, process_set=self.process_set)
        return handle, write_back

    def _maybe_launch_group(self, g, force=False):
        members = self._groups[g]
        if g in self._group_launched:
            return
        if not force and any(self._slots[p].passes_left != 0 for p in members):
            return
        self._group_launched.add(g)
        prepared = {p: self._dense_grad(p) for p in members}
        prescale, postscale = self._scale()
        by_dtype = {}
        for p in members:
            by_dtype.setdefault(prepared[p][0].dtype, []).append(p)
        for dtype, params in by_dtype.items():
            handle = grouped_allreduce_async_(
                [prepared[p][0] for p in params], name=f"allreduce.group.{g}.{dtype}",
                op=self.op, prescale_factor=prescale, postscale_factor=postscale,
                process_set=self.process_set)
            for p in params:
                slot = self._slots[p]
                slot.handle, slot.write_back = handle, prepared[p][1]

    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hooks did not run,
        e.g. parameters unused in this pass) and writes the averages into p.grad."""
        if not self._hooked:
            self._synchronized = True
            return
        # Every reduction is waited for and the state reset even when one fails (a
        # rank's mismatched gradient, a peer gone): the error is raised after, and the
        # optimizer can go on.
        if self._pushes_buckets:
            error = self._synchronize_buckets()
        else:
            for slot in self._slot_list:
                if slot.group is None and slot.handle is None:
                    slot.handle, slot.write_back = self._allreduce_grad_async(slot.param)
            for g in range(len(self._groups)):
                self._maybe_launch_group(g, force=True)
            passes = self.backward_passes_per_step
            error = None
            for slot in self._slot_list:
                handle, write_back = slot.handle, slot.write_back
                slot.handle = slot.write_back = None
                slot.passes_left = passes
                if handle is None:
                    continue
                try:
                    reduced = synchronize(handle)
                    if write_back is not None:  # None: reduced in place (_dense_grad)
                        write_back(reduced)
                except HvdError as e:
                    error = error or e
        self._unsynchronized = False
        self._group_launched.clear()
        if error is not None:
            raise error
        if self._ready_order is not None:
            self._relayout_bucket_views()
        self._synchronized = True

    def _synchronize_buckets(self):
        # Buckets whose gradients did not all come (parameters unused in this pass, or
        # fewer passes than backward_passes_per_step) start now, with what they hold.
        for bucket in self._push_buckets:
            if bucket.handle is None:
                self._launch_bucket(bucket)
        passes = self.backward_passes_per_step
        error = None
        for bucket in self._push_buckets:
            handle, bucket.handle = bucket.handle, None
            bucket.waiting = len(bucket.slots)
            for slot in bucket.slots:
                slot.passes_left = passes
            try:
                synchronize(handle)
            except HvdError as e:
                error = error or e
        return error

    @contextmanager
    def skip_synchronize(self):
        """Inside this context step() does not synchronize: use it after calling
        synchronize() yourself (e.g. to clip gradients before the update)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "after optimizer.synchronize(): the gradients were already "
                              "reduced and are not reduced again; call step() inside "
                              "`with optimizer.skip_synchronize():` after synchronize()")
            else:
                self.synchronize()
        self._synchronized = False
        result = super(self.__class__, self).step(closure)
        self._mark_step()
        return result

    @staticmethod
    def _mark_step():
        # One optimizer step is one training step: step accounting counts exactly
        # these from now on instead of detecting steps by tensor names.
        try:
            mark_step()
        except NotInitializedError:
            pass  # accounting only: a step after hvd.shutdown() is the optimizer's affair

    def zero_grad(self, *args, **kwargs):
        if self._unsynchronized:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(): the "
                                 "gradients are still being accumulated or reduced")
        if self._buckets:
            # Zeroed where they are, whatever set_to_none says: a gradient set to None
            # would leave its view, and the next backward pass would allocate anew.
            for flat in self._buckets:
                flat.zero_()
            for slot in self._slot_list:
                slot.attach()
            return None
        return super(self.__class__, self).zero_grad(*args, **kwargs)


class _Slot:
    """A hooked parameter's state: the backward passes left before its gradient counts
    as ready this step, its allreduce's name, its group (index or None), the reduction
    in flight (handle, and the callable that writes the result back, None where it is
    reduced in place), and with bucket views its view in a flat buffer and its bucket."""
    __slots__ = ("param", "passes_left", "name", "group", "handle", "write_back", "view",
                 "bucket")

    def __init__(self, param, passes, name, group):
        self.param = param
        self.passes_left = passes
        self.name = name
        self.group = group
        self.handle = None
        self.write_back = None
        self.view = None
        self.bucket = None

    def attach(self):
        # A .grad set to None (module.zero_grad()) or replaced comes back into its view.
        grad = self.param.grad
        if grad is self.view:
            return
        if grad is None:
            self.view.zero_()
        else:
            self.view.copy_(grad)
        self.param.grad = self.view


class _Bucket:
    """Consecutive gradients of one flat buffer reduced by one allreduce: its slice
    of the buffer, its parameters' slots, and how many of them this step still waits
    for."""

    def __init__(self, name, start, element_size):
        self.name = name
        self.start = start
        self.element_size = element_size
        self.slots = []
        self.flat = None
        self.waiting = 0
        self.handle = None

    def bytes(self, end):
        return (end - self.start) * self.element_size

    def close(self, flat, end):
        self.flat = flat[self.start:end]
        self.waiting = len(self.slots)


class _DistributedAdasumOptimizer(_DistributedOptimizer):
    """op=Adasum, as Horovod's delta optimizer. Adasum weighs each rank's update by
    its geometry against the others', so it needs the whole update a rank would make:
    once a parameter's gradient is complete (after backward_passes_per_step passes), the
    hook runs the wrapped optimizer's step on that parameter alone, on this rank's
    gradient, and reduces the change it made (the delta) with Adasum while backward goes
    on; until step(), the parameter holds that delta. step() sets each parameter to its
    value before the local step plus the combined delta. Optimizer state (momentum,
    Adam's moments) stays per rank, fed by the local gradients.

    The learning rate starts from a single worker's: Adasum adds orthogonal updates and
    averages parallel ones, so it is not scaled by size(). Horovod's guide suggests 2 to
    2.5 times a single worker's for Adasum on the CPU, and a single worker's times
    local_size() for CUDA tensors with NCCL (whose node sums are divided by
    local_size()).
    """
    # Only the methods below differ; the rest (naming, hooks, zero_grad) is
    # _DistributedOptimizer's, merged into the same generated class.

    def __init__(self, params, named_parameters, compression, backward_passes_per_step,
                 process_set):
        _DistributedOptimizer.__init__(self, params, named_parameters, compression,
                                       backward_passes_per_step, Adasum, 1.0, None, False,
                                       process_set)
        # Each parameter's value before its local step, to which the combined delta is
        # added.
        self._starts = {p: torch.zeros_like(p) for p in self._slots}

    def _local_step(self, p):
        """The wrapped optimizer's step on p alone, with p's group's settings."""
        stashed = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(q is p for q in group["params"]) else []
        try:
            super(self.__class__, self).step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = params

    def _allreduce_grad_async(self, p):
        start = self._starts[p]
        with torch.no_grad():
            start.copy_(p)
            self._local_step(p)
            p.sub_(start)  # p holds this rank's delta until step()
        compressed, ctx = self._compression.compress(p.data)
        handle = allreduce_async_(compressed, name=f"adasum.{self._parameter_names[p]}",
                                  op=Adasum, process_set=self.process_set)

        def apply(reduced):
            with torch.no_grad():
                start.add_(self._compression.decompress(reduced, ctx))
                p.copy_(start)
        return handle, apply

    def synchronize(self):
        """Does nothing, as Horovod's: the deltas are combined and applied in step()."""

    def skip_synchronize(self):
        raise AssertionError("skip_synchronize() is not available with op=Adasum: the "
                             "wrapped optimizer steps on the local gradients before the "
                             "reduction, so gradients cannot be changed between them")

    def step(self, closure=None):
        """Runs closure (if given), starts the local step and reduction of every
        parameter whose hook has not (fewer passes than backward_passes_per_step, or no
        gradient this time), then waits for every reduction and applies the combined
        deltas."""
        loss = closure() if closure is not None else None
        for slot in self._slot_list:
            if slot.handle is None:
                slot.handle, slot.write_back = self._allreduce_grad_async(slot.param)
        error = None
        for slot in self._slot_list:
            handle, apply = slot.handle, slot.write_back
            slot.handle = slot.write_back = None
            slot.passes_left = self.backward_passes_per_step
            try:
                apply(synchronize(handle))
            except HvdError as e:
                # Every handle is still waited for; the parameter goes back to its
                # value before the local step.
                with torch.no_grad():
                    p = slot.param
                    p.copy_(self._starts[p])
                error = error or e
        self._unsynchronized = False
        if error is not None:
            raise error
        self._mark_step()
        return loss


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False, process_set=None,
                         gradient_as_bucket_view=False, bucket_cap_mb=25):
    """Wraps a torch optimizer so that gradients are averaged over the ranks (Horovod's
    DistributedOptimizer). The result is an instance of a subclass of the optimizer's
    own class, sharing its parameter groups.

    named_parameters: model.named_parameters(), for readable, rank-independent names.
    compression: Compression.none or Compression.fp16.
    backward_passes_per_step: local backward passes accumulated before each reduction.
    op: Average, Sum or Adasum. With Adasum (on more than one rank) the wrapped
    optimizer steps on each rank's own gradients and the parameter changes are combined
    with Adasum, as Horovod's delta optimizer (see _DistributedAdasumOptimizer: keep a
    single worker's learning rate; synchronize() does nothing and skip_synchronize()
    raises AssertionError). Unlike Horovod, any process set whose size is a power of two
    works. gradient_predivide_factor: with Average, divide by this before the sum and by
    size/factor after. groups: an int (number of groups) or lists of
    parameters whose gradients are reduced together as one grouped allreduce.
    gradient_as_bucket_view (libhvd's, not Horovod's; as PyTorch DDP's option of that
    name): each parameter's .grad becomes a view into a flat buffer per dtype and
    device, laid out in the order backward completes gradients (reverse registration
    order until the first step has shown the real one, as DDP rebuilds its buckets), so
    libhvd reduces them where they are, without fusion copies. zero_grad() then zeroes
    in place whatever set_to_none says. For dense gradients only. Without groups or
    compression the gradients go a bucket at a time, as DDP's: consecutive gradients of
    a buffer, up to bucket_cap_mb megabytes (25, DDP's default), in one allreduce
    started as soon as the last of them is ready (one call where there were one per
    gradient). Every rank lays its buckets out as rank 0 does after the first step.
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor needs op=Average")
    if num_groups:
        warnings.warn("num_groups is deprecated; use groups", DeprecationWarning)
        groups = groups or num_groups
    if op == Adasum and size() > 1 and process_set_included(process_set):
        # groups and sparse_as_dense do not apply: each delta is dense and reduced on
        # its own (libhvd fuses them), as in Horovod.
        if gradient_as_bucket_view:
            raise ValueError("gradient_as_bucket_view does not apply to op=Adasum, which "
                             "reduces parameter changes, not gradients")
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
                   {**_DistributedOptimizer.__dict__, **_DistributedAdasumOptimizer.__dict__})
        return cls(optimizer.param_groups, named_parameters, compression,
                   backward_passes_per_step, process_set)
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set,
               gradient_as_bucket_view, bucket_cap_mb)

