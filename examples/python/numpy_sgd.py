"""Data-parallel SGD with numpy: each rank fits a linear model on its own shard of a
synthetic regression problem, averaging gradients with hvd.allreduce.

    hvdrun -np 2 -H localhost:2 /usr/bin/python3 examples/python/numpy_sgd.py
"""
import argparse
import sys

import numpy as np

import hvd


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--samples-per-rank", type=int, default=512)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()

    # The true weights are the same everywhere; each rank draws its own samples.
    true_w = np.random.default_rng(0).normal(size=args.features)
    rng = np.random.default_rng(1 + rank)
    x = rng.normal(size=(args.samples_per_rank, args.features))
    y = x @ true_w + 0.01 * rng.normal(size=args.samples_per_rank)

    # Start from rank 0's random weights.
    w = hvd.broadcast(np.random.default_rng(100 + rank).normal(size=args.features), 0,
                      name="w0")
    for step in range(args.steps):
        residual = x @ w - y
        grad = x.T @ residual / len(y)
        hvd.allreduce_(grad, op=hvd.Average, name="grad")  # average over ranks, in place
        w -= args.lr * grad
        if step % 50 == 0 or step == args.steps - 1:
            loss = hvd.allreduce(np.array([np.mean(residual ** 2)]), name="loss")[0]
            if rank == 0:
                print(f"step {step:4d}  loss {loss:.6f}", flush=True)

    # Every rank applied the same averaged gradients, so the weights agree.
    same = hvd.allreduce(w, op=hvd.Max, name="w.max")
    error = np.max(np.abs(w - true_w))
    if rank == 0:
        print(f"{size} ranks, max |w - w_true| = {error:.4f}", flush=True)
    hvd.shutdown()
    return 0 if np.array_equal(same, w) else 1


if __name__ == "__main__":
    sys.exit(main())
