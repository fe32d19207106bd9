"""Reference PyTorch LLaMA- and GPT-2-style language models, written from models/llm/llm_options.h and
language_model.h (not from the C++ code), with the attention of moh_reference.py (MHA, or MoH with the
learned router), so that tests/models/test_llm.cpp checks the C++ LanguageModel against them.

    tokens [B, T] -> tok_embed (+ pos_embed[0..T-1], GPT-2) -> blocks: x + attn(norm1(x)), x + mlp(norm2(x))
    -> norm -> logits = lm_head(x), or x @ tok_embed.weight^T when tied.

LLaMA: RMSNorm (x / sqrt(mean(x^2) + eps) * weight), causal attention with RoPE (theta) and optional
grouped-query heads, no biases, SwiGLU w2(silu(w1 x) * w3 x). GPT-2: LayerNorm, learned positions, causal
attention with qkv/proj biases, Mlp fc2(gelu_tanh(fc1 x)) with biases, always tied.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from moh_reference import MHA, MoH


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, o, moh):
        super().__init__()
        llama = o["arch"] == "llama"
        norm = (lambda: RMSNorm(o["dim"], o["norm_eps"])) if llama else (lambda: nn.LayerNorm(o["dim"], eps=o["norm_eps"]))
        attention = dict(head_dim=o["head_dim"], num_kv_heads=o["kv_heads"], qkv_bias=not llama, proj_bias=not llama,
                         causal=True, rope_theta=o["rope_theta"] if llama else 0.0)
        self.norm1 = norm()
        self.attn = (MHA(o["dim"], o["heads"], **attention) if moh is None
                     else MoH(o["dim"], o["heads"], moh["shared_heads"], moh["routed_topk"], **attention))
        self.norm2 = norm()
        self.mlp = SwiGLU(o["dim"], o["mlp_hidden"]) if llama else Mlp(o["dim"], o["mlp_hidden"])

    def forward(self, x):
        a, balance = self.attn(self.norm1(x))
        h = x + a
        return h + self.mlp(self.norm2(h)), balance


class LanguageModel(nn.Module):
    """o: arch ("llama" | "gpt2"), vocab_size, dim, depth, heads, kv_heads, head_dim, mlp_hidden, max_seq_len,
    rope_theta, norm_eps, tie_embeddings; moh: None or per block None / dict(shared_heads, routed_topk)."""

    def __init__(self, o, moh=None):
        super().__init__()
        llama = o["arch"] == "llama"
        self.tok_embed = nn.Embedding(o["vocab_size"], o["dim"])
        self.pos_embed = None if llama else nn.Embedding(o["max_seq_len"], o["dim"])
        self.blocks = nn.ModuleList(Block(o, None if moh is None else moh[i]) for i in range(o["depth"]))
        self.norm = RMSNorm(o["dim"], o["norm_eps"]) if llama else nn.LayerNorm(o["dim"], eps=o["norm_eps"])
        self.tied = o["tie_embeddings"] or not llama
        self.lm_head = None if self.tied else nn.Linear(o["dim"], o["vocab_size"], bias=False)

    def forward(self, tokens):
        """logits [B, T, V] and the balance losses of the routed MoH blocks."""
        x = self.tok_embed(tokens)
        if self.pos_embed is not None:
            x = x + self.pos_embed(torch.arange(tokens.shape[1], device=tokens.device))
        losses = []
        for block in self.blocks:
            x, balance = block(x)
            if balance is not None:
                losses.append(balance)
        x = self.norm(x)
        return (x @ self.tok_embed.weight.T if self.tied else self.lm_head(x)), losses

    def topk_margin(self, tokens):
        """Smallest top-k gap of any MoH block's router over these tokens (a float32 run must route alike)."""
        margin = float("inf")
        with torch.no_grad():
            x = self.tok_embed(tokens)
            if self.pos_embed is not None:
                x = x + self.pos_embed(torch.arange(tokens.shape[1], device=tokens.device))
            for block in self.blocks:
                if isinstance(block.attn, MoH):
                    margin = min(margin, block.attn.topk_margin(block.norm1(x)))
                x, _ = block(x)
        return margin
