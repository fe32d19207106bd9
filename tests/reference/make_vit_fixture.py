#!/usr/bin/python3
"""Golden fixture of a small Vision Transformer forward pass (GoldenVit tests in tests/models/test_vit.cpp).

Run with Debian's interpreter, which has python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_vit_fixture.py

Writes tests/reference/fixtures/vit_small_forward.safetensors (about 30 KB): the state dict under timm's
names ("state.<name>", float32), the float32 input "x" [2, 3, 8, 8] and the logits "logits" computed in
float64 from those float32 values. The model is timm's VisionTransformer structure written by hand here
(no timm): Conv2d patch embedding, class token, learned pos_embed, pre-norm blocks (LayerNorm eps 1e-6,
fused qkv attention, GELU Mlp), final norm on the class token, linear head. The configuration is in the
metadata. Weights are random with a larger scale than the training init so every part of the model
moves the logits. Deterministic: one seed, one thread, sorted keys.
"""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from fixture_io import randomize_for_golden, save_safetensors

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
CONFIG = dict(img_size=8, patch_size=4, in_chans=3, num_classes=5, dim=16, depth=2, heads=2, mlp_ratio=4)
EPS = 1e-6


class PatchEmbed(nn.Module):
    def __init__(self, c, d, p):
        super().__init__()
        self.proj = nn.Conv2d(c, d, kernel_size=p, stride=p)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1)) * (d // self.h) ** -0.5
        return self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))


class Mlp(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, d, h, hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, eps=EPS)
        self.attn = Attention(d, h)
        self.norm2 = nn.LayerNorm(d, eps=EPS)
        self.mlp = Mlp(d, hidden)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, num_classes, dim, depth, heads, mlp_ratio):
        super().__init__()
        n = (img_size // patch_size) ** 2
        self.patch_embed = PatchEmbed(in_chans, dim, patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim))
        self.blocks = nn.Sequential(*[Block(dim, heads, dim * mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=EPS)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def main():
    torch.manual_seed(20261129)
    torch.set_num_threads(1)
    model = VisionTransformer(**CONFIG)
    randomize_for_golden(model)
    x = torch.randn(2, CONFIG["in_chans"], CONFIG["img_size"], CONFIG["img_size"])
    with torch.no_grad():
        logits = model.double()(x.double())
    tensors = {f"state.{k}": v.float() for k, v in model.state_dict().items()}
    tensors["x"] = x
    tensors["logits"] = logits
    metadata = {k: str(v) for k, v in CONFIG.items()}
    metadata["generator"] = "tests/reference/make_vit_fixture.py"
    save_safetensors(os.path.join(FIXTURE_DIR, "vit_small_forward.safetensors"), tensors, metadata)


if __name__ == "__main__":
    main()
