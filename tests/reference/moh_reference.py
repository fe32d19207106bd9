"""Reference PyTorch multi-head and Mixture-of-Head attention, written from DESIGN.md ("MoH attention")
and the conventions documented in layers/multi_head_attention.h, layers/rope.h and layers/moh_routing.h,
not from the C++ code, so the two implementations check each other (tests/layers/test_golden_attention.cpp).

Conventions: `qkv` is one Linear to (H + 2 Hkv) * Dh rows ordered [q heads | k heads | v heads], each head
a block of Dh rows; optional `q_norm` / `k_norm` are LayerNorm(Dh, eps=1e-6) on q and k before RoPE; RoPE
is HF-LLaMA's rotate_half at positions 0..T-1 with the tables computed in float64; key/value head j
serves query heads j*G .. j*G+G-1 (repeat_interleave, G = H / Hkv); scale 1/sqrt(Dh); causal: query i
sees keys j <= i; `proj` maps H * Dh back to dim.

MoH (learned router), per token x with E = H - hs routed heads, K kept per token:
    p = softmax(W_r x), m = one_hot(topk(p, K)) (no gradient), r = K * p*m / max(sum(p*m), eps),
    s = hs * softmax(W_s x) (s = 1 when hs == 1), [a1, a2] = 2 * softmax(W_h x),
    g = [a1 * s, a2 * r]; hs == 0: g = r; K == 0: g = H * softmax(W_s' x) (or no gates),
    y = W_O concat_i(g_i * head_i) + b_O,
    L_b = E * sum_i mean_t(p_i) * mean_t(m_i) over all B*T tokens (training, K > 0 only).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):  # HF LLaMA
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(head_dim, theta, tokens, dtype, device=None):
    """cos, sin [T, Dh] (HF's cat(freqs, freqs)), computed in float64 on the CPU, rounded once to dtype, on device."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    freqs = torch.outer(torch.arange(tokens, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(device=device, dtype=dtype), emb.sin().to(device=device, dtype=dtype)


class MHA(nn.Module):
    def __init__(self, dim, num_heads, head_dim=0, num_kv_heads=0, qkv_bias=True, proj_bias=True,
                 causal=False, qk_norm=False, rope_theta=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim or dim // num_heads
        self.num_kv_heads = num_kv_heads or num_heads
        assert num_heads % self.num_kv_heads == 0
        self.causal, self.rope_theta = causal, rope_theta
        self.qkv = nn.Linear(dim, (num_heads + 2 * self.num_kv_heads) * self.head_dim, bias=qkv_bias)
        if qk_norm:
            self.q_norm = nn.LayerNorm(self.head_dim, eps=1e-6)
            self.k_norm = nn.LayerNorm(self.head_dim, eps=1e-6)
        else:
            self.q_norm = self.k_norm = None
        self.proj = nn.Linear(num_heads * self.head_dim, dim, bias=proj_bias)

    def heads(self, x):
        """Per-head attention outputs [B, T, H, Dh]."""
        b, t, _ = x.shape
        h, hkv, dh = self.num_heads, self.num_kv_heads, self.head_dim
        qkv = self.qkv(x).view(b, t, h + 2 * hkv, dh)
        q, k, v = qkv.split([h, hkv, hkv], dim=2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))  # [B, heads, T, Dh]
        if self.rope_theta > 0:
            cos, sin = rope_tables(dh, self.rope_theta, t, x.dtype, x.device)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(h // hkv, dim=1)
        v = v.repeat_interleave(h // hkv, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        if self.causal:
            future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        return (scores.softmax(-1) @ v).transpose(1, 2)  # [B, T, H, Dh]

    def forward(self, x):
        o = self.heads(x)
        return self.proj(o.reshape(*x.shape[:2], -1)), None


class MoH(MHA):
    """MHA whose heads are gated by a learned router; forward returns (y, balance loss or None)."""

    def __init__(self, dim, num_heads, shared_heads, routed_topk, gates=True, eps=1e-6, **attention):
        super().__init__(dim, num_heads, **attention)
        h, hs, k = num_heads, shared_heads, routed_topk
        assert 0 <= hs <= h and 0 <= k <= h - hs and (gates or k == 0)
        self.hs, self.k, self.eps = hs, k, eps
        self.router = self.shared_gate = self.stage_gate = None
        if k == 0:
            if gates:
                self.shared_gate = nn.Linear(dim, h, bias=False)  # W_s'
            return
        self.router = nn.Linear(dim, h - hs, bias=False)  # W_r
        if hs > 1:
            self.shared_gate = nn.Linear(dim, hs, bias=False)  # W_s
        if hs > 0:
            self.stage_gate = nn.Linear(dim, 2, bias=False)  # W_h

    def gates(self, x):
        """Head gates g [N, H] (None: all ones) and the balance loss (None without routed heads)."""
        h, hs, k = self.num_heads, self.hs, self.k
        if k == 0:
            return (None if self.shared_gate is None else h * self.shared_gate(x).softmax(-1)), None
        e = h - hs
        p = self.router(x).softmax(-1)  # [N, E]
        with torch.no_grad():
            m = torch.zeros_like(p).scatter_(1, p.topk(k, dim=1).indices, 1.0)
        pm = p * m
        r = k * pm / pm.sum(1, keepdim=True).clamp(min=self.eps)
        balance = e * (p.mean(0) * m.mean(0)).sum()
        if hs == 0:
            return r, balance
        s = torch.ones(x.shape[0], 1, dtype=x.dtype, device=x.device) if hs == 1 else hs * self.shared_gate(x).softmax(-1)
        a = 2 * self.stage_gate(x).softmax(-1)  # [N, 2]
        return torch.cat((a[:, :1] * s, a[:, 1:] * r), dim=1), balance

    def forward(self, x):
        b, t, dim = x.shape
        g, balance = self.gates(x.reshape(b * t, dim))
        o = self.heads(x)  # [B, T, H, Dh]
        if g is not None:
            o = o * g.view(b, t, self.num_heads, 1)
        return self.proj(o.reshape(b, t, -1)), balance

    def topk_margin(self, x):
        """Smallest gap, over tokens, between the K-th and the (K+1)-th router probability."""
        if self.k == 0 or self.k == self.num_heads - self.hs:
            return math.inf
        with torch.no_grad():
            p = self.router(x.reshape(-1, x.shape[-1])).softmax(-1).sort(1, descending=True).values
            return (p[:, self.k - 1] - p[:, self.k]).min().item()
