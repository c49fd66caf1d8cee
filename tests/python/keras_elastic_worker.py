"""A Keras worker of an elastic job, for test_keras_elastic_generations.py, which
launches each generation with mpiexec and the environment hvdrun would set.

It fits a small model with a DistributedOptimizer(Adam) for EPOCHS epochs of STEPS
batches, Horovod's way: a KerasState with Horovod's three callbacks, committing every
second batch and at each epoch's end. It writes what it did as JSON lines
(OUT/gen<G>.rank<R>.log) and the model's and optimizer's variables as .npz files
(OUT/*.npz) at each commit and after the state's synchronization, for the test to
compare bit for bit.
"""
import argparse
import json
import os
import sys
import threading

from elastic_driver_stand_in import play_node

play_node()  # the node this rank plays, before hvd reads the environment

import keras  # noqa: E402
import numpy as np  # noqa: E402

import hvd.keras as hvd  # noqa: E402
from hvd.elastic import _session  # noqa: E402

STEPS, EPOCHS, BATCH, BATCHES_PER_COMMIT = 4, 3, 2, 2


def options():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--crash-at-step", type=int, default=-1,
                        help="the job's step (counted across generations) to die before")
    parser.add_argument("--interrupt-at-commit", type=int, default=-1,
                        help="rank 0 waits for HOSTS_UPDATED before this commit")
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

    keras.utils.set_random_seed(100 + rank + 10 * generation)  # what sync must replace
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="tanh"),
                              keras.layers.Dense(2)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)),
                  loss="mse")

    def variables_file(name):
        arrays = {f"v{i}": keras.ops.convert_to_numpy(v.value) for i, v in
                  enumerate(list(model.variables) + list(model.optimizer.variables))}
        np.savez(os.path.join(args.out, name), **arrays)

    def steps_done():
        return int(keras.ops.convert_to_numpy(model.optimizer.iterations))

    class RecordingState(hvd.elastic.KerasState):
        def commit(self):
            number = _session.current().commit_number + 1
            record("commit", number=number, batch=self.batch, epoch=self.epoch,
                   steps=steps_done())
            variables_file(f"gen{generation}.commit{number}.rank{rank}.npz")
            super().commit()

        def check_host_updates(self):
            try:
                super().check_host_updates()
            except hvd.elastic.HostsUpdatedInterrupt:
                record("interrupted", commit=_session.current().commit_number,
                       updates=self.updates)
                raise

        def on_hosts_updated(self, timestamp, update_res):
            super().on_hosts_updated(timestamp, update_res)
            self.updates.append((timestamp, int(update_res)))
            self.update_arrived.set()

    state = RecordingState(model, epoch=0, batch=0)
    state.updates, state.update_arrived = [], threading.Event()
    state.register_reset_callbacks([lambda: record("reset", size=size)])

    class Script(keras.callbacks.Callback):
        """Dies before a step, or lets rank 0 wait for hvdrun's news before a commit,
        so that the test knows where each happens."""

        def on_train_batch_begin(self, batch, logs=None):
            if rank == args.crash_rank and steps_done() == args.crash_at_step:
                log.close()
                os._exit(1)  # before the step's collectives: the peers wait in them

        def on_train_batch_end(self, batch, logs=None):
            upcoming = _session.current().commit_number + 1
            if rank == 0 and upcoming == args.interrupt_at_commit \
                    and not state.update_arrived.wait(120):
                raise RuntimeError("hvdrun's HOSTS_UPDATED never arrived")

    callbacks = [Script(), hvd.elastic.UpdateEpochStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.CommitStateCallback(state, BATCHES_PER_COMMIT)]
    rng = np.random.default_rng(rank)
    x = rng.random((STEPS * BATCH, 4), dtype=np.float32)
    y = rng.random((STEPS * BATCH, 2), dtype=np.float32)

    @hvd.elastic.run
    def train(state):
        session = _session.current()
        record("synced", restored_from=session.restored_from, batch=state.batch,
               epoch=state.epoch, steps=steps_done())
        variables_file(f"gen{generation}.synced.rank{rank}.npz")
        state.model.fit(x, y, batch_size=BATCH, steps_per_epoch=STEPS,
                        epochs=EPOCHS - state.epoch, callbacks=callbacks, verbose=0)
        return "done"

    result = train(state)
    record("returned", result=result, steps=steps_done())
    hvd.shutdown()


if __name__ == "__main__":
    sys.exit(main())
