"""Adasum against averaging: the same small model trained with
DistributedOptimizer(op=hvd.Average) and DistributedOptimizer(op=hvd.Adasum) over a
range of learning rates, printing the held-out loss each reaches (or where it
diverges).

The model is linear regression with shared weights (8 dense features) and a bias per
category (64 categories, an Embedding). The data is split by category, as data split
by user or by source often is: rank r sees only categories r, r + size, ... So every
rank's gradient of the shared weights points the same way, while their gradients of
the per-category biases touch disjoint rows. Averaging divides the bias updates by the
number of ranks; Adasum combines each tensor by its geometry (per tensor): the
parallel weight updates are averaged and the orthogonal bias updates added.

What it shows, honestly: Adasum does NOT converge at a larger learning rate than
averaging here. Adasum's combined step is never shorter than the average (for two
updates of equal length at angle t it is (2 - cos t) times the average), and both
diverge once the learning rate passes the shared weights' stability limit. What Adasum
does is converge much further at the same learning rate: averaging needs about size()
times the learning rate to move the per-category biases as fast (at 4 ranks, Average at
lr 0.4 reaches what Adasum reaches at 0.1), and it diverges before it could match
Adasum at 0.3 (the linear scaling rule's 4 x 0.3).

Observed with the defaults, 100 steps of SGD with batch 16 per rank (held-out loss,
8.08 at the start; inf: diverged):

    4 ranks  lr    0.1    0.2    0.3    0.4    0.6
    Average      0.334  0.249  0.185  0.138    inf
    Adasum       0.138  0.046  0.023  0.024    inf

    2 ranks  lr    0.1    0.2    0.3    0.4    0.6
    Average      0.329  0.248  0.202  0.205    inf
    Adasum       0.245  0.144  0.099  0.165    inf

(2 CPU cores shared with other jobs: 7 s at 2 ranks, 55 s at 4.)

    mpiexec -n 4 /usr/bin/python3 examples/python/adasum_train.py
    hvdrun -np 2 /usr/bin/python3 examples/python/adasum_train.py --steps 50
"""
import argparse
import math

import torch

import hvd.torch as hvd

FEATURES, CATEGORIES = 8, 64
DIVERGED = 1e6


def make_truth():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(FEATURES, generator=g, dtype=torch.float64),
            torch.randn(CATEGORIES, generator=g, dtype=torch.float64))


def sample(n, categories, truth, g):
    """n examples of the given categories: features, category, target."""
    weights, biases = truth
    scales = torch.linspace(0.5, 2.0, FEATURES, dtype=torch.float64)
    c = categories[torch.randint(len(categories), (n,), generator=g)]
    x = torch.randn(n, FEATURES, generator=g, dtype=torch.float64) * scales
    return x, c, x @ weights + biases[c] + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = torch.nn.Linear(FEATURES, 1, bias=False).double()
        self.biases = torch.nn.Embedding(CATEGORIES, 1).double()
        for p in self.parameters():
            torch.nn.init.zeros_(p)

    def forward(self, x, c):
        return self.weights(x).squeeze(1) + self.biases(c).squeeze(1)


def mse(model, x, c, y):
    return 0.5 * ((model(x, c) - y) ** 2).mean()


def train(op, lr, args, truth, held_out):
    """The held-out loss after args.steps steps (inf if it diverged). Every rank holds
    the same parameters, so every rank decides alike."""
    model = Model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                   named_parameters=model.named_parameters(), op=op)
    mine = torch.arange(hvd.rank(), CATEGORIES, hvd.size())
    g = torch.Generator().manual_seed(100 + hvd.rank())
    for step in range(1, args.steps + 1):
        opt.zero_grad()
        mse(model, *sample(args.batch_size, mine, truth, g)).backward()
        opt.step()
        if step % 10 == 0 or step == args.steps:
            with torch.no_grad():
                loss = mse(model, *held_out).item()
            if not math.isfinite(loss) or loss > DIVERGED:
                return math.inf
    return loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16, help="examples per rank per step")
    parser.add_argument("--lrs", default="0.1,0.2,0.3,0.4,0.6",
                        help="comma-separated learning rates")
    args = parser.parse_args()

    hvd.init()
    torch.set_num_threads(1)
    truth = make_truth()
    held_out = sample(4000, torch.arange(CATEGORIES), truth, torch.Generator().manual_seed(99))
    lrs = [float(v) for v in args.lrs.split(",")]
    results = {name: [train(op, lr, args, truth, held_out) for lr in lrs]
               for name, op in (("Average", hvd.Average), ("Adasum", hvd.Adasum))}

    if hvd.rank() == 0:
        print(f"{hvd.size()} ranks, {args.steps} steps of SGD, batch {args.batch_size} per "
              f"rank, rank r holding categories r, r+{hvd.size()}, ... of {CATEGORIES}")
        print("held-out loss (inf: diverged)")
        print(f"  {'lr':8}" + "".join(f"{lr:>8g}" for lr in lrs))
        for name, losses in results.items():
            print(f"  {name:8}" + "".join(f"{loss:8.3f}" for loss in losses))
        print(conclusion(lrs, results))
    hvd.shutdown()


def conclusion(lrs, results):
    """What the table says, in words."""
    def largest_stable(losses):
        return max((lr for lr, loss in zip(lrs, losses) if math.isfinite(loss)), default=None)

    def best(losses):
        return min(zip(losses, lrs))

    avg_max, ada_max = largest_stable(results["Average"]), largest_stable(results["Adasum"])
    (avg_loss, avg_lr), (ada_loss, ada_lr) = best(results["Average"]), best(results["Adasum"])
    lines = [f"best: Average {avg_loss:.3f} at lr {avg_lr:g}; Adasum {ada_loss:.3f} at lr "
             f"{ada_lr:g}"]
    if ada_max is not None and (avg_max is None or ada_max > avg_max):
        lines.append(f"Adasum converges at lr {ada_max:g}, where averaging diverges.")
    else:
        lines.append(f"Adasum does not converge at a larger learning rate than averaging on "
                     f"this model (largest without diverging: Average {avg_max}, Adasum "
                     f"{ada_max}).")
    if ada_loss < avg_loss:
        lines.append(f"It reaches a {avg_loss / ada_loss:.1f}x lower loss than averaging "
                     "does at any of these learning rates.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
