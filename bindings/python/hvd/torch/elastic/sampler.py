"""ElasticSampler: a distributed sampler that counts the samples processed in the
epoch, so that a restored or synchronized state resumes the epoch where it was."""
import math
import random

from torch.utils.data import Sampler

from ...basics import rank, size

__all__ = ["ElasticSampler"]


class ElasticSampler(Sampler):
    """Splits a dataset's samples among the ranks, as torch's DistributedSampler does,
    after those already processed in this epoch. Needs hvd.init() first.

    The epoch's order is one permutation of the whole dataset, the same on every rank
    and the same as Horovod 0.28's (Python's random.Random(seed + epoch).shuffle) when
    shuffle is on, else the dataset's order. The first processed_num samples of it are
    done; the rest are dealt to the ranks in turn, each rank getting
    ceil(rest / ranks), the first ones repeated to fill the last share.

    Every rank calls record_batch(batch_idx, batch_size) after each batch: a batch on
    every rank is batch_size x ranks samples of the epoch, so processed_num counts
    the job's samples, not this rank's (as Horovod 0.28's does). set_epoch(epoch)
    starts an epoch afresh."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Counts one batch of batch_size samples on every rank as processed."""
        self.processed_num += batch_size * self.num_replicas

    def state_dict(self):
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def reset(self):
        """Recomputes the samples left in the epoch and this rank's share of them."""
        self.num_replicas = size()
        self.rank = rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = math.ceil(len(self.remaining_indices) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        padded = list(self.remaining_indices)
        while padded and len(padded) < self.total_size:
            padded += self.remaining_indices[:self.total_size - len(padded)]
        self.indices = padded[self.rank:self.total_size:self.num_replicas]
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
