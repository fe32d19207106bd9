#!/usr/bin/python3
"""Golden fixtures from PyTorch for the layers (the Golden* tests in tests/layers/test_*.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_layer_fixtures.py

Writes tests/reference/fixtures/nn_<layer>.safetensors (about 30 KB in all). For each case
("<case>.*"): the module's state dict under its PyTorch names ("<case>.state.<name>"), the input
"x" (or int64 "indices"), a fixed random upstream gradient "grad_out", the output "out" and the
gradients torch autograd gives for that upstream gradient ("grad.x", "grad.<param name>"), all in
float32 (torch computes in float32). Reference modules: torch.nn.Linear / LayerNorm / Embedding,
an RMSNorm and a SwiGLU written like HF-LLaMA's, timm's Mlp, timm's PatchEmbed (Conv2d with
kernel = stride = patch, flatten(2).transpose(1, 2)) and HF-LLaMA's rotate_half RoPE applied with
per-sample position_ids.

Position tables are computed in float64 (our tables are computed in double and rounded once):
DiT's timestep_embedding with .float() replaced by .double(), MAE's get_2d_sincos_pos_embed
(numpy, float64) and, for RoPE, the cos/sin tables (HF's formula in float64, then rounded to
float32 before the float32 rotation). Deterministic: each file uses its own torch.manual_seed on
one thread and fixture_io writes sorted keys, so a re-run rewrites byte-identical files.
"""

import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from fixture_io import save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def run_case(name, module, x, out_fn=None):
    """Forward `module` on x (float input gets a gradient), backprop a random upstream gradient."""
    out = {f"{name}.state.{k}": v.clone() for k, v in module.state_dict().items()}
    inputs = []
    if x.is_floating_point():
        x = x.detach().requires_grad_(True)
        inputs.append(("x", x))
        out[f"{name}.x"] = x
    else:
        out[f"{name}.indices"] = x
    y = (out_fn or module)(x)
    g = torch.randn_like(y)
    params = list(module.named_parameters())
    grads = torch.autograd.grad(y, [t for _, t in inputs] + [p for _, p in params], g)
    out.update({f"{name}.out": y, f"{name}.grad_out": g})
    for (pname, _), gp in zip(inputs + params, grads):
        out[f"{name}.grad.{pname}"] = gp
    return out


def randomize(module):
    """Non-trivial norm parameters (ones/zeros would hide weight/bias mix-ups)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + 1.0)
    return module


def linear_fixtures():
    torch.manual_seed(11)
    out = run_case("bias", nn.Linear(6, 5), torch.randn(2, 3, 6))
    out.update(run_case("nobias", nn.Linear(6, 5, bias=False), torch.randn(4, 6)))
    return out


class RMSNorm(nn.Module):  # HF LlamaRMSNorm
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def norm_fixtures():
    torch.manual_seed(12)
    out = run_case("layer_norm", randomize(nn.LayerNorm(8)), torch.randn(2, 3, 8) * 2 + 0.5)
    out.update(run_case("layer_norm_plain", nn.LayerNorm(8, elementwise_affine=False), torch.randn(3, 8)))
    out.update(run_case("rms_norm", randomize(RMSNorm(8)), torch.randn(2, 3, 8) * 2))
    return out


def embedding_fixtures():
    torch.manual_seed(13)
    indices = torch.tensor([[1, 4, 4, 9, 0], [3, 1, 1, 1, 7]], dtype=torch.int64)
    return run_case("embedding", nn.Embedding(10, 4), indices)


class Mlp(nn.Module):  # timm.layers.Mlp (norm_layer=None)
    def __init__(self, in_features, hidden_features, out_features, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class SwiGLU(nn.Module):  # HF LlamaMLP / Meta FeedForward naming
    def __init__(self, dim, hidden_dim, out_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, out_dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def mlp_fixtures():
    torch.manual_seed(14)
    out = run_case("mlp", Mlp(6, 12, 5), torch.randn(2, 3, 6))
    gelu_tanh = lambda: nn.GELU(approximate="tanh")  # noqa: E731
    out.update(run_case("mlp_tanh", Mlp(6, 12, 6, act_layer=gelu_tanh), torch.randn(4, 6)))
    out.update(run_case("swiglu", SwiGLU(6, 10, 7), torch.randn(2, 3, 6)))
    return out


class PatchEmbed(nn.Module):  # timm.layers.PatchEmbed (flatten=True, norm=Identity)
    def __init__(self, patch_size, in_chans, embed_dim):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


def patch_embed_fixtures():
    torch.manual_seed(15)
    out = run_case("square", PatchEmbed(4, 3, 8), torch.randn(2, 3, 8, 8))
    out.update(run_case("wide", PatchEmbed(2, 2, 5), torch.randn(2, 2, 4, 6)))  # a 2 x 3 patch grid
    return out


def rotate_half(x):  # HF LLaMA
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(head_dim, theta, positions):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    freqs = positions.to(torch.float64)[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().float(), emb.sin().float()


def rope_fixtures():
    torch.manual_seed(16)
    out = {}
    per_sample = torch.tensor([[0, 1, 2, 3, 4], [7, 3, 9, 1, 12]])
    for name, theta, positions in (("shared", 10000.0, torch.arange(5)), ("per_sample", 500000.0, per_sample)):
        x = torch.randn(2, 3, 5, 8).requires_grad_(True)
        cos, sin = rope_tables(8, theta, positions)
        if positions.dim() == 2:  # HF: cos[position_ids].unsqueeze(1) against [B, H, T, D]
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        y = x * cos + rotate_half(x) * sin
        g = torch.randn_like(y)
        (gx,) = torch.autograd.grad(y, x, g)
        out.update({f"{name}.x": x, f"{name}.positions": positions, f"{name}.out": y, f"{name}.grad_out": g,
                    f"{name}.grad.x": gx})
    return out


def timestep_embedding(t, dim, max_period=10000):  # DiT, in float64
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float64) / half)
    args = t[:, None].double() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):  # MAE
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000 ** omega
    pos = pos.reshape(-1)
    out = np.einsum("m,d->md", pos, omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def get_2d_sincos_pos_embed(embed_dim, grid_h_size, grid_w_size, cls_token=False):
    # MAE's function; the reference takes one grid_size, this takes both (same meshgrid(w, h) order).
    grid_h = np.arange(grid_h_size, dtype=np.float32)
    grid_w = np.arange(grid_w_size, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)
    grid = np.stack(grid, axis=0).reshape([2, 1, grid_h_size, grid_w_size])
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])
    pos_embed = np.concatenate([emb_h, emb_w], axis=1)
    if cls_token:
        pos_embed = np.concatenate([np.zeros([1, embed_dim]), pos_embed], axis=0)
    return pos_embed


def position_fixtures():
    t = torch.tensor([0.0, 1.0, 17.5, 250.0, 999.0], dtype=torch.float64)
    return {"timestep.t": t, "timestep.dim16": timestep_embedding(t, 16),
            "timestep.dim15": timestep_embedding(t, 15, max_period=1000),
            "sincos2d.square": torch.from_numpy(get_2d_sincos_pos_embed(16, 4, 4, cls_token=True)),
            "sincos2d.wide": torch.from_numpy(get_2d_sincos_pos_embed(8, 2, 3))}


def main():
    torch.set_num_threads(1)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    meta = {"generator": "tests/reference/make_layer_fixtures.py", "torch": torch.__version__.split("+")[0]}
    for name, fn in (("linear", linear_fixtures), ("norm", norm_fixtures), ("embedding", embedding_fixtures),
                     ("mlp", mlp_fixtures), ("patch_embed", patch_embed_fixtures), ("rope", rope_fixtures),
                     ("position", position_fixtures)):
        path = os.path.join(FIXTURE_DIR, "nn_" + name + ".safetensors")
        save_safetensors(path, fn(), meta)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
