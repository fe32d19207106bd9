#!/usr/bin/python3
"""Golden fixtures for the LanguageModel (tests/models/test_llm.cpp), from llm_reference.py in float64.

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_llm_fixtures.py

Writes tests/reference/fixtures/llm_<case>.safetensors, one per configuration. Each holds the parameters
under the model's names ("state.<name>", normal std 0.3, norm weights around 1, drawn in float32 so a
float32 run loads them unrounded), int64 "tokens" [B, T] and "targets" [B, T] (the next tokens of one
drawn sequence), then in float64 the "logits" [B, T, V], the "loss"
L = mean cross entropy(logits, targets) + sum of the routed MoH blocks' balance losses, and "grad.<name>",
the gradient of L for every parameter (tied: tok_embed.weight collects both uses). The model's options
are metadata strings named as the LlmOptions fields; MoH blocks as comma lists "shared_heads" and
"routed_topk" (empty: MHA everywhere).

MoH gates: the attention is moh_reference.MoH, so the fixtures hold whatever gate parameters that
reference defines (today stage_gate with a bias, as layers/moh_routing.h). The stage gate's bias is
stored as zero, so the fixtures also hold for a layer whose stage gate has no bias (the C++ test then
skips that entry); its gradient is still compared where the layer has one.

Deterministic and re-runnable: each case draws from its own torch.manual_seed on one thread and fixture_io
writes sorted keys, so a re-run rewrites byte-identical files.
"""

import os

import torch
import torch.nn.functional as F

from fixture_io import save_safetensors
from llm_reference import LanguageModel

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
BATCH, TOKENS = 2, 7

BASE = dict(vocab_size=13, dim=16, depth=2, heads=4, kv_heads=4, head_dim=4, mlp_hidden=24, max_seq_len=8,
            rope_theta=100.0, norm_eps=1e-5, tie_embeddings=False)

# name: (seed, options, per-block MoH (shared_heads, routed_topk) or None)
CASES = {
    "llama_gqa_rope_untied": (201, dict(BASE, arch="llama", kv_heads=2), None),
    "llama_moh_tied": (202, dict(BASE, arch="llama", heads=6, kv_heads=3, tie_embeddings=True), [(1, 2), (2, 2)]),
    "gpt2_mha": (203, dict(BASE, arch="gpt2", mlp_hidden=32, tie_embeddings=True), None),
    "gpt2_moh": (204, dict(BASE, arch="gpt2", mlp_hidden=32, tie_embeddings=True), [(1, 2), (0, 2)]),
}


def randomize(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            is_norm_weight = "norm" in name and name.endswith("weight")
            p.copy_((torch.randn_like(p) * 0.3 + (1.0 if is_norm_weight else 0.0)).float())
            if name.endswith("stage_gate.bias"):
                p.zero_()


def metadata(options, moh):
    meta = {"generator": "tests/reference/make_llm_fixtures.py", "torch": torch.__version__.split("+")[0],
            "batch": str(BATCH), "tokens": str(TOKENS),
            "shared_heads": ",".join(str(hs) for hs, _ in moh or []),
            "routed_topk": ",".join(str(k) for _, k in moh or [])}
    for key, value in options.items():
        meta[key] = str(int(value)) if isinstance(value, bool) else str(value)
    return meta


def make_case(seed, options, moh):
    torch.manual_seed(seed)
    blocks = None if moh is None else [dict(shared_heads=hs, routed_topk=k) for hs, k in moh]
    model = LanguageModel(options, blocks).double()
    randomize(model)
    sequence = torch.randint(0, options["vocab_size"], (BATCH, TOKENS + 1))
    tokens, targets = sequence[:, :-1].contiguous(), sequence[:, 1:].contiguous()
    if moh is not None:  # a float32 run must select the same heads
        assert model.topk_margin(tokens) > 1e-4, f"seed {seed}: a top-k near-tie"
    logits, balance = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, options["vocab_size"]), targets.reshape(-1)) + sum(balance)
    assert len(balance) == (0 if moh is None else sum(1 for _, k in moh if k > 0))
    names, params = zip(*model.named_parameters())
    grads = torch.autograd.grad(loss, params)
    out = {f"state.{k}": v.float() for k, v in model.state_dict().items()}
    out.update({"tokens": tokens, "targets": targets, "logits": logits.detach(), "loss": loss.detach()})
    out.update({f"grad.{name}": g for name, g in zip(names, grads)})
    return out


def main():
    torch.set_num_threads(1)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    total = 0
    for name, (seed, options, moh) in CASES.items():
        path = os.path.join(FIXTURE_DIR, f"llm_{name}.safetensors")
        save_safetensors(path, make_case(seed, options, moh), metadata(options, moh))
        total += os.path.getsize(path)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    print(f"{total} bytes in all")


if __name__ == "__main__":
    main()
