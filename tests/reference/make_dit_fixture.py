#!/usr/bin/python3
"""Golden fixture of a small DiT (GoldenDit tests in tests/models/test_dit.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_dit_fixture.py

Writes tests/reference/fixtures/dit_small.safetensors: three models of the twin in dit_reference.py with the
configuration in the metadata (8x8x4 input, patch 2, dim 16, depth 2, 4 heads, mlp_ratio 2, 5 classes with a
null class, learned sigma), "mha" (MHA in both blocks), "moh" (block 0 MoH with 1 shared head and top-2 of 3
routed, block 1 an all-shared gated MoH layer) and "moh_heads" (per-block head counts, see MODELS). Shared
inputs: "x" [2, 4, 8, 8], fractional timesteps "t", labels "y", "force_drop_ids" (sample 1 takes the null
class) and the loss weights "w" [2, 8, 8, 8]. Per model "<m>.": its state dict ("<m>.state.<name>",
float32), computed in float64 from those float32 values: the output "<m>.out", the balance losses
"<m>.balance" (MoH models), the gradients of loss = sum(out * w) + sum(balance) with respect to x
("<m>.grad.x") and every parameter ("<m>.grad.<name>"), and forward_with_cfg on (x, [t0, t0], [y0, null]) at
scale 2.5 on 3 channels (the reference code's) ("<m>.cfg3"). Weights are random with a larger scale than
DiT's init (whose zero layers would hide most of the model).
Deterministic: one seed, one thread, sorted keys.
"""

import os

import torch

from dit_reference import PRESETS, DiT
from fixture_io import save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
CONFIG = dict(input_size=8, patch_size=2, in_channels=4, dim=16, depth=2, heads=4, mlp_ratio=2.0,
              class_dropout_prob=0.1, num_classes=5, learn_sigma=True)
# "moh_heads": per-block head counts with a fixed head width (MoH-DiT-L/XL's layout, scaled down): block 0 has
# 3 heads (1 shared, top-1 of 2 routed), block 1 6 all-shared heads, both of width 4 (attention widths 12 and
# 24 against dim 16).
MODELS = {"mha": dict(moh=None), "moh": dict(moh=[(1, 2), (4, 0)]),
          "moh_heads": dict(heads=[3, 6], head_dim=4, moh=[(1, 1), (6, 0)])}
CFG_SCALE = 2.5


def main():
    torch.manual_seed(20261203)
    torch.set_num_threads(1)
    x = torch.randn(2, CONFIG["in_channels"], 8, 8)
    t = torch.tensor([3.75, 541.0])
    y = torch.tensor([3, 1], dtype=torch.int64)
    force = torch.tensor([0, 1], dtype=torch.int64)
    w = torch.randn(2, 2 * CONFIG["in_channels"], 8, 8)
    tensors = dict(x=x, t=t, y=y, force_drop_ids=force, w=w)
    for key, variant in MODELS.items():
        model = DiT(**{**CONFIG, **variant})
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(0.2 * torch.randn_like(p))
        for name, v in model.state_dict().items():
            tensors[f"{key}.state.{name}"] = v.float().clone()
        model = model.double()
        model.pos_embed.copy_(model.pos_embed.float().double())  # the buffer as moh stores it (float32 values)
        xd = x.double().requires_grad_(True)
        out, balances = model(xd, t.double(), y, force)
        loss = (out * w.double()).sum() + sum(balances, torch.zeros((), dtype=torch.float64))
        loss.backward()
        tensors[f"{key}.out"] = out.detach()
        if balances:
            tensors[f"{key}.balance"] = torch.stack(balances).detach()
        tensors[f"{key}.grad.x"] = xd.grad
        for name, p in model.named_parameters():
            tensors[f"{key}.grad.{name}"] = p.grad
        with torch.no_grad():
            null = CONFIG["num_classes"]
            tensors[f"{key}.cfg3"] = model.forward_with_cfg(x.double(), t.double()[[0, 0]],
                                                            torch.tensor([y[0].item(), null]), CFG_SCALE, 3)
    metadata = {k: str(v) for k, v in CONFIG.items()}
    metadata.update(moh=str(MODELS["moh"]["moh"]), moh_heads=str(MODELS["moh_heads"]), cfg_scale=str(CFG_SCALE),
                    generator="tests/reference/make_dit_fixture.py")
    save_safetensors(os.path.join(FIXTURE_DIR, "dit_small.safetensors"), tensors, metadata)
    for name, size in PRESETS.items():
        if name != "DiT-XL/2":
            print(name, "parameters:", sum(p.numel() for p in DiT(**size).parameters()))


if __name__ == "__main__":
    main()
