#!/usr/bin/python3
"""PyTorch twin of bench/vit_train (moh_bench_vit_train): the same ViT trained on random images and labels.

Usage (the model shape comes from moh, never from here):

    /usr/bin/python3 scripts/bench_vs_torch.py --config "$(moh_bench_vit_train --config-only)" \
        [--steps 30] [--warmup 5] [--threads 2]

The config is the JSON object moh_bench_vit_train prints (img_size, patch_size, in_chans, num_classes,
dim, depth, heads, mlp_hidden, qkv_bias, class_token, layer_norm_eps, batch, lr, weight_decay). The
model is timm's ViT written by hand (as tests/reference/make_vit_fixture.py): Conv2d patch embedding,
learned pos_embed, pre-norm blocks (LayerNorm, fused qkv, softmax(q k^T) v attention, GELU Mlp), then
timm's pooling: the class token through `norm`, or (class_token false) the token mean through
`fc_norm`; linear head; fp32, AdamW, cross-entropy, drop_path 0. The attention is always MHA (the
reference for moh's MoH runs too). Prints a line of medians, then one JSON object.
"""

import argparse
import ctypes
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, heads, qkv_bias):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = ((q @ k.transpose(-2, -1)) * self.scale).softmax(-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, eps = c["dim"], c["layer_norm_eps"]
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, c["heads"], c["qkv_bias"])
        self.norm2 = nn.LayerNorm(d, eps=eps)
        self.fc1 = nn.Linear(d, c["mlp_hidden"])
        self.fc2 = nn.Linear(c["mlp_hidden"], d)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class VisionTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, p = c["dim"], c["patch_size"]
        n = (c["img_size"] // p) ** 2
        self.class_token = c["class_token"]
        self.patch_embed = nn.Conv2d(c["in_chans"], d, kernel_size=p, stride=p)
        if self.class_token:
            self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n + int(self.class_token), d))
        self.blocks = nn.Sequential(*[Block(c) for _ in range(c["depth"])])
        self.norm = nn.LayerNorm(d, eps=c["layer_norm_eps"])  # timm's norm, or fc_norm without class token
        self.head = nn.Linear(d, c["num_classes"])

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        if self.class_token:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.blocks(x + self.pos_embed)
        return self.head(self.norm(x[:, 0] if self.class_token else x.mean(1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, help="JSON printed by moh_bench_vit_train --config-only")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    c = json.loads(args.config)
    if args.steps < 1 or args.warmup < 0 or args.threads < 1:
        ap.error("--steps and --threads must be positive and --warmup >= 0")
    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)
    model = VisionTransformer(c).train()
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], weight_decay=c["weight_decay"])
    b = c["batch"]
    images = torch.randn(b, c["in_chans"], c["img_size"], c["img_size"])
    labels = torch.randint(0, c["num_classes"], (b,))
    step_ms, forward_ms, backward_ms, optimizer_ms, cpu_ms, losses = [], [], [], [], [], []
    for s in range(args.warmup + args.steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        loss = F.cross_entropy(model(images), labels)
        forward_end = time.perf_counter()
        loss.backward()
        backward_end = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        end, cpu_end = time.perf_counter(), time.process_time()
        if s >= args.warmup:
            step_ms.append((end - start) * 1e3)
            forward_ms.append((forward_end - start) * 1e3)
            backward_ms.append((backward_end - forward_end) * 1e3)
            optimizer_ms.append((end - backward_end) * 1e3)
            cpu_ms.append((cpu_end - cpu_start) * 1e3)
    med = statistics.median(step_ms)
    try:  # the OpenBLAS kernels torch's GEMMs ran on (torch 1.13 on Debian calls OpenBLAS)
        openblas = ctypes.CDLL("libopenblas.so.0")
        openblas.openblas_get_corename.restype = ctypes.c_char_p
        blas_core = openblas.openblas_get_corename().decode()
    except (OSError, AttributeError):
        blas_core = "unknown"
    parts = [statistics.median(x) for x in (forward_ms, backward_ms, optimizer_ms, cpu_ms)]
    n_params = sum(p.numel() for p in model.parameters())
    print(f"torch {torch.__version__}: {n_params} parameters, batch {b}, {torch.get_num_threads()} threads; "
          f"median {med:.2f} ms/step (forward {parts[0]:.2f}, backward {parts[1]:.2f}, optimizer {parts[2]:.2f}; "
          f"fastest step {min(step_ms):.2f}; CPU time {parts[3]:.2f}), {b * 1e3 / med:.1f} images/s "
          f"(loss {losses[0]:.4f} -> {losses[-1]:.4f})")
    print(json.dumps({"framework": "torch", "version": torch.__version__, "threads": torch.get_num_threads(),
                      "parameters": n_params, "step_ms": step_ms, "median_ms": med, "min_ms": min(step_ms),
                      "forward_ms": parts[0], "backward_ms": parts[1], "optimizer_ms": parts[2], "cpu_ms": parts[3],
                      "images_per_s": b * 1e3 / med, "loss_first": losses[0], "loss_last": losses[-1],
                      "blas_core": blas_core}))

if __name__ == "__main__":
    main()
