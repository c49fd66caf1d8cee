"""A Horovod PyTorch training script, written for Horovod and run unchanged on libhvd
through the `horovod` stand-in. Exits non-zero if the ranks end up with different
parameters or the loss does not fall."""
import sys

import torch
import torch.nn.functional as F

import horovod.torch as hvd

hvd.init()
torch.manual_seed(42 + hvd.rank())
torch.set_num_threads(1)

model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
lr_scaler = hvd.size()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * lr_scaler, momentum=0.5)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
compression = hvd.Compression.none
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                     compression=compression, op=hvd.Average)

# Each rank holds its own shard of a synthetic, separable data set.
data = torch.randn(256, 10)
target = (data[:, 0] > 0).long()


def metric_average(val, name):
    tensor = torch.tensor(val)
    avg_tensor = hvd.allreduce(tensor, name=name)
    return avg_tensor.item()


first_loss = None
for epoch in range(3):
    model.train()
    for i in range(0, 256, 32):
        optimizer.zero_grad()
        output = model(data[i:i + 32])
        loss = F.cross_entropy(output, target[i:i + 32])
        loss.backward()
        optimizer.step()
    avg_loss = metric_average(loss.item(), "avg_loss")
    first_loss = avg_loss if first_loss is None else first_loss
    if hvd.rank() == 0:
        print(f"epoch {epoch}: loss {avg_loss:.4f}", flush=True)

flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
gathered = hvd.broadcast(flat, root_rank=0, name="final_params")
ok = torch.equal(flat, gathered) and avg_loss < first_loss
if hvd.rank() == 0:
    print("horovod-style script:", "OK" if ok else "FAILED", flush=True)
hvd.shutdown()
sys.exit(0 if ok else 1)
