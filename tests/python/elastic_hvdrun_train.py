"""A torch training script of an elastic job, run by test_elastic_hvdrun.py under the
real hvdrun: hvd.elastic.TorchState holding a model, a DistributedOptimizer (SGD
with momentum, so that the optimizer's state matters) and an ElasticSampler.

Usage: elastic_hvdrun_train.py OUT DATASET_SIZE KILL_GENERATION KILL_BATCH

Each rank writes OUT/gen<G>.rank<R>.log, one JSON object a line: "sync" (the batch
and the bytes' digest of the state the generation starts from), "batch" (the batch's
number and the samples it trained on, written after the step's allreduce), "commit"
(the batch and digest of the state about to be committed). Rank 0 of generation 0
prints READY_LINE after its third commit and then waits at its next commit for
hvdrun's announcement of new hosts, so that every rank is interrupted at that commit
whatever the timing. Rank 1 of generation KILL_GENERATION ends itself (os._exit(1))
as batch KILL_BATCH starts.
"""
import hashlib
import json
import os
import sys
import threading

import torch

import horovod.torch as hvd

BATCH_SIZE = 2       # per rank
COMMIT_EVERY = 2     # batches
GROW_AFTER_COMMITS = 3
UPDATE_WAIT_S = 120  # for hvdrun's announcement (it checks the hosts every second)
READY_LINE = "elastic-train: committed, ready to grow"

out, dataset_size, kill_generation, kill_batch = (
    sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
generation = int(os.environ["HVD_ELASTIC_GENERATION"])

hvd.init()
torch.manual_seed(0)
log_file = open(os.path.join(out, f"gen{generation}.rank{hvd.rank()}.log"), "a")


def log(event, **fields):
    log_file.write(json.dumps(dict(event=event, **fields)) + "\n")
    log_file.flush()


# Sample i is (i, x_i, y_i): the index travels with the sample, so the log says which
# samples each batch trained on.
indices = torch.arange(dataset_size)
features = torch.linspace(-1, 1, dataset_size * 4).reshape(dataset_size, 4)
targets = features.sum(dim=1, keepdim=True) * 0.5
dataset = torch.utils.data.TensorDataset(indices, features, targets)

model = torch.nn.Linear(4, 1)
optimizer = hvd.DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
    named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=7)
loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH_SIZE, sampler=sampler)


class TrainState(hvd.elastic.TorchState):
    """Also notes that hvdrun announced new hosts (rank 0 hears it)."""

    def __init__(self, *args, **kwargs):
        self.hosts_updated_seen = threading.Event()
        super().__init__(*args, **kwargs)

    def on_hosts_updated(self, timestamp, update_res):
        super().on_hosts_updated(timestamp, update_res)
        self.hosts_updated_seen.set()


def digest():
    """The bytes of the weights and of the optimizer's momentum."""
    h = hashlib.sha256()
    for tensor in model.state_dict().values():
        h.update(tensor.numpy().tobytes())
    for slot in optimizer.state_dict()["state"].values():
        h.update(slot["momentum_buffer"].numpy().tobytes())
    return h.hexdigest()


commits = 0


@hvd.elastic.run
def train(state):
    global commits
    log("sync", batch=state.batch, epoch=state.epoch, digest=digest(), size=hvd.size(),
        processed=sampler.processed_num)
    for state.epoch in range(state.epoch, 1):
        for sample_ids, x, y in loader:
            b = state.batch
            if generation == kill_generation and b == kill_batch and hvd.rank() == 1:
                log_file.close()
                os._exit(1)
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            sampler.record_batch(b, BATCH_SIZE)
            state.batch = b + 1
            log("batch", batch=b, samples=sample_ids.tolist())
            if state.batch % COMMIT_EVERY == 0:
                if generation == 0 and commits == GROW_AFTER_COMMITS and hvd.rank() == 0:
                    if not state.hosts_updated_seen.wait(UPDATE_WAIT_S):
                        raise SystemExit("hvdrun announced no new hosts")
                log("commit", batch=state.batch, digest=digest())
                state.commit()
                commits += 1
                if generation == 0 and commits == GROW_AFTER_COMMITS and hvd.rank() == 0:
                    print(READY_LINE, flush=True)
        sampler.set_epoch(state.epoch + 1)
        state.batch = 0
        state.commit()
    log("done", digest=digest())


state = TrainState(model, optimizer, sampler=sampler, epoch=0, batch=0)
train(state)
