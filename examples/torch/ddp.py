# PyTorch's DDP over ringgrad (or gloo): torchrun --nproc_per_node 2 --redirects 2 --tee 2 examples/torch/ddp.py [ringgrad|gloo]
import sys, torch, torch.distributed as dist, ringgrad_torch  # noqa: F401 (importing ringgrad_torch registers "ringgrad")
dist.init_process_group(sys.argv[1] if len(sys.argv) > 1 else "ringgrad")
torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)))
optimizer, data = torch.optim.SGD(model.parameters(), lr=0.1), torch.Generator().manual_seed(1 + dist.get_rank())
for step in range(10):
    x = torch.randn(32, 16, generator=data)  # each rank its own batch
    loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True).sin())
    optimizer.zero_grad(); loss.backward(); optimizer.step()  # backward all-reduces the gradients over the backend
    print(f"step {step} loss on rank 0 {loss.item():.7f}") if dist.get_rank() == 0 else None
