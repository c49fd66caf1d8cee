"""SyncBatchNorm: batch normalization whose statistics cover the whole global batch.

In training, each rank sums its inputs per channel (count, sum, sum of squares); one
allreduce adds those up over the ranks, so every rank normalizes with the mean and
variance of the global batch and updates identical running statistics. The backward
pass allreduces the two per-channel sums the input gradient needs. The weight and bias
gradients stay local: DistributedOptimizer averages them like any other. Plain tensor
arithmetic, so CPU and CUDA tensors both work. In eval mode (with running statistics)
it is an ordinary batch norm.
"""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from ..basics import Sum
from .async_ops import allreduce_async, synchronize


def _channel_sums(x, *tensors):
    """Per-channel sums over every dimension but 1, as float64 for accuracy."""
    dims = [d for d in range(x.dim()) if d != 1]
    return [t.to(torch.float64).sum(dim=dims) for t in tensors]


def _allreduce_sum(parts, name):
    """Sums a list of 1-D float64 tensors over the ranks in one operation."""
    packed = torch.cat([p.reshape(-1) for p in parts])
    summed = synchronize(allreduce_async(packed, name=name, op=Sum))
    return list(torch.split(summed, [p.numel() for p in parts]))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum):
        x = x.contiguous()
        channels = x.size(1)
        count = torch.full((1,), x.numel() // channels, dtype=torch.float64, device=x.device)
        local_sum, local_sq = _channel_sums(x, x, x * x)
        total, s, q = _allreduce_sum([count, local_sum, local_sq], "sync_batch_norm.stats")
        n = total.item()
        mean = s / n
        var = (q / n - mean * mean).clamp_min(0)
        invstd = torch.rsqrt(var + eps)
        if running_mean is not None:
            unbiased = var * (n / max(n - 1, 1))
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        shape = [1, channels] + [1] * (x.dim() - 2)
        mean_b = mean.to(x.dtype).view(shape)
        invstd_b = invstd.to(x.dtype).view(shape)
        xhat = (x - mean_b) * invstd_b
        out = xhat
        if weight is not None:
            out = out * weight.view(shape) + bias.view(shape)
        ctx.save_for_backward(xhat, weight, invstd_b)
        ctx.count = n
        return out

    @staticmethod
    def backward(ctx, grad_output):
        xhat, weight, invstd = ctx.saved_tensors
        dy = grad_output.contiguous()
        shape = invstd.shape
        sum_dy, sum_dy_xhat = _channel_sums(dy, dy, dy * xhat)
        grad_weight = sum_dy_xhat.to(dy.dtype) if weight is not None else None
        grad_bias = sum_dy.to(dy.dtype) if weight is not None else None
        grad_input = None
        if ctx.needs_input_grad[0]:
            g_sum_dy, g_sum_dy_xhat = _allreduce_sum([sum_dy, sum_dy_xhat],
                                                     "sync_batch_norm.grad")
            n = ctx.count
            scale = invstd if weight is None else invstd * weight.view(shape)
            grad_input = scale * (dy - (g_sum_dy / n).to(dy.dtype).view(shape)
                                  - xhat * (g_sum_dy_xhat / n).to(dy.dtype).view(shape))
        return grad_input, grad_weight, grad_bias, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the global batch (Horovod's hvd.SyncBatchNorm): same
    arguments as torch.nn.BatchNorm1d/2d/3d, input of shape (N, C, ...)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"SyncBatchNorm expects an input of shape (N, C, ...), got "
                             f"{input.dim()} dimension(s)")

    def forward(self, input):
        from ..basics import size
        self._check_input_dim(input)
        momentum = self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or not self.track_running_stats
        if not use_batch_stats or size() == 1:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, use_batch_stats, momentum or 0.0, self.eps)
        running = self.track_running_stats and self.training
        return _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean if running else None,
            self.running_var if running else None, self.eps, momentum or 0.0)
