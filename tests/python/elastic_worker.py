"""A worker of an elastic job, for test_elastic_generations.py, which launches each
generation with mpiexec and the environment hvdrun would set.

It trains a small model with Adam on an ElasticSampler's samples, two per rank and
batch, committing a TorchState after each batch, and writes what it did as JSON lines
(OUT/gen<G>.rank<R>.log) and its states as torch.save files (OUT/*.pt) for the test
to compare. HVD_TEST_STATE_DIRS (comma-separated, one per rank) gives each rank the
HVD_ELASTIC_STATE_DIR of the "host" it plays: ranks with the same directory share a
node's state files, a rank with a directory of its own is a new host.
"""
import argparse
import json
import os
import sys
import threading

from elastic_driver_stand_in import play_node

play_node()  # the node this rank plays, before hvd reads the environment

import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402
from hvd.elastic import _session  # noqa: E402

BATCH = 2


class Numbers(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


class NoticingState(hvd.elastic.TorchState):
    """Lets rank 0 wait until hvdrun's news arrived, so that the test knows at which
    step the change of hosts is acted on."""

    def on_hosts_updated(self, timestamp, update_res):
        super().on_hosts_updated(timestamp, update_res)
        self.updates.append((timestamp, int(update_res)))
        self.update_arrived.set()


def options():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--dataset", type=int, default=26)
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--crash-at-batch", type=int, default=-1)
    parser.add_argument("--interrupt-at-batch", type=int, default=-1)
    parser.add_argument("--lonely-commit", action="store_true",
                        help="rank 0 commits once more than the others")
    parser.add_argument("--unpicklable-on-rank", type=int, default=-1)
    return parser.parse_args()


def main():
    args = options()
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    generation = int(os.environ["HVD_ELASTIC_GENERATION"])
    log = open(os.path.join(args.out, f"gen{generation}.rank{rank}.log"), "w")

    def record(event, **values):
        log.write(json.dumps(dict(event=event, **values)) + "\n")
        log.flush()

    torch.manual_seed(7)
    model = torch.nn.Linear(4, 3)
    if generation > 0:
        with torch.no_grad():  # what sync must replace, different on every rank
            for parameter in model.parameters():
                parameter.fill_(100.0 + rank)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    sampler = hvd.elastic.ElasticSampler(Numbers(args.dataset), shuffle=True, seed=3)
    loader = torch.utils.data.DataLoader(Numbers(args.dataset), batch_size=BATCH,
                                         sampler=sampler)
    state = NoticingState(model, optimizer, sampler=sampler, epoch=0, batch=0, note="plain")
    state.updates = []
    state.update_arrived = threading.Event()
    synced = []
    state.register_reset_callbacks([lambda: record("reset", synced=bool(synced), size=size)])

    def dump(name):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "sampler": sampler.state_dict(), "epoch": state.epoch,
                    "batch": state.batch}, os.path.join(args.out, name))

    def step(indices):
        x = indices.to(torch.float32).unsqueeze(1).repeat(1, 4) * 0.1
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        for i, parameter in enumerate(model.parameters()):
            parameter.grad = hvd.allreduce(parameter.grad, name=f"grad.{i}")
        optimizer.step()
        sampler.record_batch(0, len(indices))

    @hvd.elastic.run
    def train(state):
        synced.append(True)
        session = _session.current()
        record("synced", commit=session.commit_number, restored_from=session.restored_from,
               batch=state.batch, environment={k: os.environ.get(k) for k in (
                   "HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK",
                   "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE",
                   "HOROVOD_HOSTNAME", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS")})
        dump(f"gen{generation}.synced.rank{rank}.pt")
        if args.lonely_commit:
            if rank == 0:
                state.commit()
            return "lonely"
        if args.unpicklable_on_rank >= 0:
            if rank == args.unpicklable_on_rank:
                state.note = lambda: 0  # after the sync, which gave every rank rank 0's
            try:
                state.commit()
            except Exception as error:  # noqa: BLE001 - each rank's error is the subject
                record("commit-failed", type=type(error).__name__, message=str(error))
            # Every rank has its error: they leave together, none is killed mid-record.
            hvd.allreduce(torch.zeros(1), name="after-commit-failure")
            return "commit-failed"
        for state.epoch in range(state.epoch, 1):
            for indices in loader:
                state.batch += 1
                if rank == args.crash_rank and state.batch == args.crash_at_batch:
                    log.close()
                    os._exit(1)  # before the step's collectives: the peers wait in them
                step(indices)
                record("batch", batch=state.batch, indices=indices.tolist())
                if state.batch == args.interrupt_at_batch:
                    if rank == 0 and not state.update_arrived.wait(120):
                        raise RuntimeError("hvdrun's HOSTS_UPDATED never arrived")
                    try:  # not a commit: what changed since the last one must survive
                        state.check_host_updates()
                    except hvd.elastic.HostsUpdatedInterrupt as interrupt:
                        record("interrupted", batch=state.batch, skip_sync=interrupt.skip_sync,
                               updates=state.updates)
                        dump(f"gen{generation}.interrupted.rank{rank}.pt")
                        raise
                    raise RuntimeError("check_host_updates raised nothing")
                state.commit()
                if rank == 0:
                    dump(f"commit{session.commit_number}.pt")
            sampler.set_epoch(state.epoch + 1)
        record("done", batch=state.batch)
        return "done"

    result = train(state)
    record("returned", result=result)
    hvd.shutdown()


if __name__ == "__main__":
    sys.exit(main())
