#!/usr/bin/python3
"""Golden fixtures for MultiHeadAttention and MoHAttention (tests/layers/test_golden_attention.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_moh_fixtures.py

Writes tests/reference/fixtures/moh_<case>.safetensors (about 130 KB in all), one per configuration,
from the reference modules of moh_reference.py computing in float64. Each file holds the parameters
under their names ("state.<name>", normal std 0.3 so routing is far from uniform; norm weights around
1), the input "x" and a fixed upstream gradient "grad_out", all drawn in float32 and stored as float32
(exact: the float64 computation uses these very values, and a float32 run loads them unrounded), then
in float64 the output "out", the balance loss "balance_loss" (MoH with routed heads) and the gradients
of L = sum(out * grad_out) + balance_loss with respect to x ("grad.x") and every parameter
("grad.<name>"). The layer's configuration is stored as metadata
strings (the keys of AttentionOptions / MoHOptions), so the C++ test builds the layer from the file.

Deterministic and re-runnable: each case draws from its own torch.manual_seed on one thread and
fixture_io writes sorted keys, so a re-run rewrites byte-identical files.
"""

import os

import torch

from fixture_io import save_safetensors
from moh_reference import MHA, MoH

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
HEAD_DIM, BATCH = 4, 2

# name: (seed, tokens, attention options, MoH options or None for plain MHA)
CASES = {
    "mha_plain": (101, 5, dict(dim=16, num_heads=2), None),  # H * Dh != dim
    "mha_causal_rope_gqa_qknorm": (
        102, 7, dict(dim=16, num_heads=4, num_kv_heads=2, causal=True, qk_norm=True, rope_theta=100.0), None),
    "shared2_top2": (103, 6, dict(dim=16, num_heads=6), dict(shared_heads=2, routed_topk=2)),
    "shared1_top2": (104, 5, dict(dim=16, num_heads=4, proj_bias=False), dict(shared_heads=1, routed_topk=2)),
    "shared0_top1": (105, 5, dict(dim=16, num_heads=3), dict(shared_heads=0, routed_topk=1)),
    "all_shared_gates": (106, 5, dict(dim=16, num_heads=3), dict(shared_heads=0, routed_topk=0, gates=True)),
    "causal_rope_gqa_qknorm_shared2_top3": (
        107, 9, dict(dim=16, num_heads=6, num_kv_heads=3, qkv_bias=False, causal=True, qk_norm=True,
                     rope_theta=100.0), dict(shared_heads=2, routed_topk=3)),
}

ATTENTION_DEFAULTS = dict(num_kv_heads=0, qkv_bias=True, proj_bias=True, causal=False, qk_norm=False,
                          rope_theta=0.0)
MOH_DEFAULTS = dict(gates=True, eps=1e-6)


def randomize(module):
    with torch.no_grad():
        for name, p in module.named_parameters():
            is_norm_weight = "norm" in name and name.endswith("weight")
            value = torch.randn_like(p) * 0.3 + (1.0 if is_norm_weight else 0.0)
            p.copy_(value.float())  # float32-representable: stored as float32 without loss


def metadata(kind, tokens, attention, moh):
    meta = {"generator": "tests/reference/make_moh_fixtures.py", "torch": torch.__version__.split("+")[0],
            "kind": kind, "batch": str(BATCH), "tokens": str(tokens), "head_dim": str(HEAD_DIM)}
    options = {**ATTENTION_DEFAULTS, **attention, **({**MOH_DEFAULTS, **moh} if moh is not None else {})}
    for key, value in options.items():
        meta[key] = str(int(value)) if isinstance(value, bool) else repr(value)
    return meta


def make_case(seed, tokens, attention, moh):
    torch.manual_seed(seed)
    options = {**attention, "head_dim": HEAD_DIM}
    module = (MHA(**options) if moh is None else MoH(**options, **moh)).double()
    randomize(module)
    x = torch.randn(BATCH, tokens, attention["dim"]).double().requires_grad_(True)
    upstream = torch.randn(BATCH, tokens, attention["dim"]).double()
    if moh is not None:  # the float32 run must select the same heads
        assert module.topk_margin(x) > 1e-4, f"seed {seed}: a top-k near-tie"
    y, balance = module(x)
    loss = (y * upstream).sum() + (balance if balance is not None else 0)
    names, params = zip(*module.named_parameters())
    grads = torch.autograd.grad(loss, (x,) + params)
    out = {f"state.{k}": v.float() for k, v in module.state_dict().items()}
    out.update({"x": x.detach().float(), "grad_out": upstream.float(), "out": y.detach(), "grad.x": grads[0]})
    out.update({f"grad.{name}": g for name, g in zip(names, grads[1:])})
    if balance is not None:
        out["balance_loss"] = balance.detach()
    return out


def main():
    torch.set_num_threads(1)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    total = 0
    for name, (seed, tokens, attention, moh) in CASES.items():
        path = os.path.join(FIXTURE_DIR, f"moh_{name}.safetensors")
        save_safetensors(path, make_case(seed, tokens, attention, moh),
                         metadata("mha" if moh is None else "moh", tokens, attention, moh))
        total += os.path.getsize(path)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    print(f"{total} bytes in all")


if __name__ == "__main__":
    main()
