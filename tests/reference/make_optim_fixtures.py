#!/usr/bin/python3
"""Golden fixture from PyTorch for AdamW + warmup-cosine (tests/trainers/test_optim_golden.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_optim_fixtures.py

Trains a tiny MLP y = fc2(tanh(fc1(x))) (fc1: 3 -> 4, fc2: 4 -> 2, float64, random weights) on one
fixed batch (x [8, 3], target [8, 2]) with the MSE loss written out, mean((y - target)^2), for six
steps of torch.optim.AdamW with two parameter groups (weights decayed, biases not) and a LambdaLR
schedule: linear warmup (s + 1) / W for s < W, then cosine from base_lr to min_lr over the remaining
steps (trainers/schedule.h). Writes tests/reference/fixtures/optim_adamw.safetensors: "x",
"target", the initial parameters "init.<name>", the parameters after each step "step<k>.<name>"
(k = 1..6), the lr each step used "lr" [6], and the hyper-parameters in the metadata.
Deterministic (fixed seed, one thread, sorted keys): a re-run rewrites a byte-identical file.
"""

import math
import os

import torch

from fixture_io import save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
H = dict(lr=0.05, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, warmup_steps=2, total_steps=6, min_lr=0.005)
STEPS = 6


def lr_lambda(s):
    if s < H["warmup_steps"]:
        return (s + 1) / H["warmup_steps"]
    u = min(1.0, (s - H["warmup_steps"]) / (H["total_steps"] - H["warmup_steps"]))
    lr = H["min_lr"] + (H["lr"] - H["min_lr"]) * 0.5 * (1 + math.cos(math.pi * u))
    return lr / H["lr"]


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dt = torch.float64
    fc1, fc2 = torch.nn.Linear(3, 4).to(dt), torch.nn.Linear(4, 2).to(dt)
    with torch.no_grad():
        for p in [fc1.weight, fc1.bias, fc2.weight, fc2.bias]:
            p.copy_(torch.randn(p.shape, dtype=dt) * 0.7)
    x, target = torch.randn(8, 3, dtype=dt), torch.randn(8, 2, dtype=dt)
    named = {"fc1.weight": fc1.weight, "fc1.bias": fc1.bias, "fc2.weight": fc2.weight, "fc2.bias": fc2.bias}
    out = {"x": x, "target": target}
    out.update({f"init.{n}": p.detach().clone() for n, p in named.items()})
    opt = torch.optim.AdamW(
        [{"params": [fc1.weight, fc2.weight], "weight_decay": H["weight_decay"]},
         {"params": [fc1.bias, fc2.bias], "weight_decay": 0.0}],
        lr=H["lr"], betas=(H["beta1"], H["beta2"]), eps=H["eps"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    lrs = []
    for k in range(1, STEPS + 1):
        opt.zero_grad()
        y = fc2(torch.tanh(fc1(x)))
        loss = ((y - target) ** 2).mean()
        loss.backward()
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
        out.update({f"step{k}.{n}": p.detach().clone() for n, p in named.items()})
    out["lr"] = torch.tensor(lrs, dtype=dt)
    metadata = {k: repr(v) for k, v in H.items()}
    metadata["generator"] = "tests/reference/make_optim_fixtures.py"
    metadata["torch"] = torch.__version__
    save_safetensors(os.path.join(FIXTURE_DIR, "optim_adamw.safetensors"), out, metadata)


if __name__ == "__main__":
    main()
