"""PyTorch twin of moh's DiT (models/dit), written from the structure of facebookresearch/DiT's models.py
(TimestepEmbedder, LabelEmbedder, DiTBlock, FinalLayer, DiT with unpatchify and forward_with_cfg), with the
attention of moh_reference.py (MHA, or MoH with the learned router) and the same module names, so its state
dict and moh's match key for key. Sinusoids (timestep embedding, the 2-D sin-cos pos_embed) are computed in
float64 and rounded once to the model's dtype, as moh's layers/position.h. Used by make_dit_fixture.py.

    x [N, C, H, W] -> x_embedder (Conv2d k = s = p) + pos_embed -> c = t_embedder(t) + y_embedder(y)
    -> blocks: x + gate_msa * attn(modulate(norm1(x), shift_msa, scale_msa)), the same for mlp
    -> final_layer: linear(modulate(norm_final(x), shift, scale)) -> unpatchify -> [N, 2C, H, W]
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from moh_reference import MHA, MoH

PRESETS = {
    "DiT-S/2": dict(depth=12, dim=384, heads=6),
    "DiT-B/2": dict(depth=12, dim=768, heads=12),
    "DiT-L/2": dict(depth=24, dim=1024, heads=16),
    "DiT-XL/2": dict(depth=28, dim=1152, heads=16),
}


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def timestep_embedding(t, dim, dtype, max_period=10000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float64) / half)
    args = t.double()[:, None] * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb.to(dtype)


def sincos_2d(dim, grid):
    """MAE/DiT get_2d_sincos_pos_embed [grid * grid, dim]: first half the column index, second the row."""
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4))
    rows, cols = torch.meshgrid(torch.arange(grid, dtype=torch.float64), torch.arange(grid, dtype=torch.float64),
                                indexing="ij")

    def one(pos):
        out = pos.reshape(-1)[:, None] * omega[None]
        return torch.cat([torch.sin(out), torch.cos(out)], dim=1)

    return torch.cat([one(cols), one(rows)], dim=1)


class TimestepEmbedder(nn.Module):
    def __init__(self, dim, frequency_dim=256):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(frequency_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.frequency_dim = frequency_dim

    def forward(self, t):
        return self.mlp(timestep_embedding(t, self.frequency_dim, self.mlp[0].weight.dtype))


class LabelEmbedder(nn.Module):
    def __init__(self, num_classes, dim, dropout_prob):
        super().__init__()
        self.embedding_table = nn.Embedding(num_classes + (dropout_prob > 0), dim)
        self.num_classes = num_classes

    def forward(self, labels, force_drop_ids=None):
        if force_drop_ids is not None:
            labels = torch.where(force_drop_ids == 1, torch.full_like(labels, self.num_classes), labels)
        return self.embedding_table(labels)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class DiTBlock(nn.Module):
    def __init__(self, dim, heads, mlp_ratio, moh, head_dim=0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = (MHA(dim, heads, head_dim=head_dim) if moh is None
                     else MoH(dim, heads, moh[0], moh[1], head_dim=head_dim))
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        a, balance = self.attn(modulate(self.norm1(x), shift_msa, scale_msa))
        x = x + gate_msa.unsqueeze(1) * a
        return x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp)), balance


class FinalLayer(nn.Module):
    def __init__(self, dim, patch_size, out_channels):
        super().__init__()
        self.norm_final = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(dim, patch_size * patch_size * out_channels)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim))

    def forward(self, x, c):
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


class DiT(nn.Module):
    """moh: None (MHA everywhere) or per block None / (shared_heads, routed_topk). heads: one count for every block
    or one per block (MoH-DiT-L/XL); head_dim 0 = dim / the block's heads."""

    def __init__(self, input_size=32, patch_size=2, in_channels=4, dim=1152, depth=28, heads=16, mlp_ratio=4.0,
                 class_dropout_prob=0.1, num_classes=1000, learn_sigma=True, moh=None, head_dim=0):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = 2 * in_channels if learn_sigma else in_channels
        self.patch_size = patch_size
        self.x_embedder = nn.Module()
        self.x_embedder.proj = nn.Conv2d(in_channels, dim, patch_size, stride=patch_size)
        self.t_embedder = TimestepEmbedder(dim)
        self.y_embedder = LabelEmbedder(num_classes, dim, class_dropout_prob)
        grid = input_size // patch_size
        self.register_buffer("pos_embed", sincos_2d(dim, grid).float().unsqueeze(0))
        block_heads = heads if isinstance(heads, list) else [heads] * depth
        self.blocks = nn.ModuleList(DiTBlock(dim, block_heads[i], mlp_ratio, None if moh is None else moh[i], head_dim)
                                    for i in range(depth))
        self.final_layer = FinalLayer(dim, patch_size, self.out_channels)

    def unpatchify(self, x):
        c, p = self.out_channels, self.patch_size
        h = w = int(x.shape[1] ** 0.5)
        x = x.reshape(x.shape[0], h, w, p, p, c)
        return torch.einsum("nhwpqc->nchpwq", x).reshape(x.shape[0], c, h * p, w * p)

    def forward(self, x, t, y, force_drop_ids=None):
        """-> output [N, out_channels, H, W], list of the MoH blocks' balance losses."""
        x = self.x_embedder.proj(x).flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y, force_drop_ids)
        balances = []
        for block in self.blocks:
            x, balance = block(x, c)
            if balance is not None:
                balances.append(balance)
        return self.unpatchify(self.final_layer(x, c)), balances

    def forward_with_cfg(self, x, t, y, cfg_scale, cfg_channels):
        half = x[: len(x) // 2]
        out, _ = self.forward(torch.cat([half, half], dim=0), t, y)
        eps, rest = out[:, :cfg_channels], out[:, cfg_channels:]
        cond, uncond = torch.split(eps, len(eps) // 2, dim=0)
        half_eps = uncond + cfg_scale * (cond - uncond)
        return torch.cat([torch.cat([half_eps, half_eps], dim=0), rest], dim=1)
