"""Synthetic-image benchmark: a small CNN trained with hvd.torch's DistributedOptimizer
on random images, printing images/sec per rank and in total (as Horovod's
pytorch_synthetic_benchmark does).

    hvdrun -np 2 -H localhost:2 /usr/bin/python3 examples/python/torch_train.py
"""
import argparse
import timeit

import numpy as np
import torch
import torch.nn.functional as F

import hvd.torch as hvd


class SmallCNN(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32 * 8 * 8, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32, help="images per rank per batch")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up batches")
    parser.add_argument("--batches", type=int, default=10, help="batches per iteration")
    parser.add_argument("--iters", type=int, default=3, help="timed iterations")
    parser.add_argument("--fp16-allreduce", action="store_true",
                        help="send gradients as float16")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    parser.add_argument("--bucket-views", action="store_true",
                        help="gradients as views into flat buffers, reduced without copies")
    args = parser.parse_args()

    hvd.init()
    torch.set_num_threads(args.threads)
    torch.manual_seed(hvd.rank())
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", hvd.local_rank()) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)

    model = SmallCNN().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.9)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression,
                                         gradient_as_bucket_view=args.bucket_views)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, 3, 32, 32, device=device)
    target = torch.randint(0, 10, (args.batch_size,), device=device)

    def benchmark_step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    log(f"Model: SmallCNN, batch size {args.batch_size} per rank, {hvd.size()} ranks, "
        f"{'CUDA' if use_cuda else 'CPU'}")
    timeit.timeit(benchmark_step, number=args.warmup)
    rates = []
    for i in range(args.iters):
        seconds = timeit.timeit(benchmark_step, number=args.batches)
        rate = args.batch_size * args.batches / seconds
        log(f"Iter #{i}: {rate:.1f} img/sec per rank")
        rates.append(rate)

    mean, conf = np.mean(rates), 1.96 * np.std(rates)
    # Each rank fills its own slot; a sum gives everyone every rank's rate.
    slots = torch.zeros(hvd.size(), dtype=torch.float64)
    slots[hvd.rank()] = mean
    per_rank = hvd.allreduce(slots, op=hvd.Sum, name="rates").tolist()
    for r, value in enumerate(per_rank):
        log(f"Rank {r}: {value:.1f} img/sec")
    log(f"Img/sec per rank: {mean:.1f} +- {conf:.1f}")
    log(f"Total img/sec on {hvd.size()} rank(s): {sum(per_rank):.1f} "
        f"+- {hvd.size() * conf:.1f}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
