#!/usr/bin/python3
"""PyTorch reference trainer for moh's `llm` task: the same model, data, optimizer and metric as
`moh train CONFIG`, so moh's speed and validation bits per byte can be compared with PyTorch's.

    /usr/bin/python3 tests/reference/train_llm_reference.py CONFIG.yaml [key=value ...] \
        [--moh build/moh] [--steps N] [--seconds S] [--warmup W] [--metrics FILE.jsonl]

The config is resolved by `moh config CONFIG [key=value ...]` (the same defaults and overrides moh
trains with) and read with PyYAML (python3-yaml, scripts/setup.sh --reference). Per config key:
  model.*       llm_reference.LanguageModel: the preset's shape (PRESETS below, as models/llm/llm_options.cpp),
                then the model.* overrides, then llm_options.h's defaults (kv_heads = heads, head_dim =
                dim / heads, LLaMA SwiGLU hidden 2/3 * 4 * dim rounded up to 256, rope_theta 10000); vocab =
                the tokenizer's. Init as models/llm/language_model.h: normal(0.02) for every matrix, the
                residual projections 0.02 / sqrt(2 depth), biases 0, norm weights 1 (torch's own RNG).
  attention     mha; moh with the learned router runs moh_reference.MoH: the same function, but every head
                is computed and gated (dense), so its speed is not MoH's sparse speed.
  data.*        the llm.c shards <dir>/train_*.bin, val_*.bin and the character tokenizer (moh_char) of
                data.tokenizer. Training windows of seq_len + 1 tokens inside one shard, uniformly at random
                with replacement (torch's RNG from run.seed, not moh's Philox stream).
  optim.*       torch.optim.AdamW (lr, betas, eps, weight_decay); no decay for 1-D parameters, the model's
                no_weight_decay() (GPT-2: pos_embed.weight) and optim.no_decay entries (a name or a dotted
                suffix), as trainers/optimizer.cpp.
  schedule.*    lr at step s: warmup base * (s + 1) / warmup_steps, then cosine / linear to min_lr over
                train.steps, or constant (trainers/schedule.h).
  train.*       batch_size, grad_clip (torch.nn.utils.clip_grad_norm_; 0 = off), steps; loss = mean
                cross-entropy + moh.balance_loss * mean of the MoH blocks' balance losses.
  eval.*, data.eval_tokens  validation as the llm task: windows starting at 0, seq_len, 2 seq_len, ... of
                each val shard, eval.batch_size per batch, the first eval_tokens / seq_len windows (0: all);
                loss per token, bits per byte = summed loss / ln 2 / UTF-8 bytes of the targets' text, the
                end-of-text token not counted.
  threads       torch.set_num_threads (0: torch's default).
  device        cpu, or cuda / cuda:N (one GPU; a step ends with loss.item(), which waits for its work).
Only fp32, one process (no grad_accum, no data parallelism): anything else is an error.

--steps N trains N steps (default train.steps); --seconds S stops earlier once S seconds of training
have passed (the lr schedule still spans the N steps, as moh's does over train.steps). The first --warmup
steps (default 5) are left out of the step-time medians. --metrics writes one JSON line per
train.log_every steps (step, loss, lr, tokens_per_s) and, every eval.every steps and at the end, one with
the validation metrics (eval/loss, eval/bits_per_byte, ...; their time is not training time).
The last line printed is one JSON object: model (the resolved shape), parameters, step_ms (every
measured step) and cpu_ms (its CPU time, all threads), median_ms, tokens_per_s (batch * seq_len /
median step), train_tokens_per_s (all steps, data included), val_loss, val_bits_per_byte,
val_perplexity, steps, stopped_by ("steps" | "seconds").
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_reference import LanguageModel  # noqa: E402
from moh_reference import MoH  # noqa: E402

# models/llm/llm_options.cpp's presets: the fields a preset sets (every other field has its default; the
# llm task replaces a preset's vocabulary by the tokenizer's, so it is not listed).
PRESETS = {
    "kjv_tiny": dict(arch="llama", dim=128, depth=4, heads=8, mlp_hidden=384, max_seq_len=256, tie_embeddings=True),
    "gpt2_124m": dict(arch="gpt2", dim=768, depth=12, heads=12, max_seq_len=1024),
    "llm_s": dict(arch="llama", dim=768, depth=12, heads=12, max_seq_len=2048),
    "llm_b": dict(arch="llama", dim=1536, depth=24, heads=16, max_seq_len=2048),
}
INIT_STD = 0.02
RESIDUAL_PROJECTIONS = ("attn.proj.weight", "mlp.fc2.weight", "mlp.w2.weight")
SHARD_HEADER_INTS = 256
SHARD_FORMATS = {(20240520, 1): np.uint16, (20240801, 7): np.uint32}  # data/text/token_shard.h


def fail(message, status=2):
    """Config and usage problems exit 2, unreadable data 1 (as the moh CLI)."""
    print(f"train_llm_reference.py: {message}", file=sys.stderr)
    sys.exit(status)


def resolved_config(moh, config, overrides):
    run = subprocess.run([moh, "config", config, *overrides], capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"`{moh} config {config}` failed:\n{run.stderr.strip()}")
    return yaml.safe_load(run.stdout)


def model_options(model_cfg, vocab):
    preset = model_cfg["preset"]
    if preset not in PRESETS:
        fail(f"model.preset '{preset}' is not one of {', '.join(PRESETS)}")
    o = dict(arch="llama", vocab_size=0, kv_heads=0, head_dim=0, mlp_hidden=0, rope_theta=10000.0, norm_eps=1e-5,
             tie_embeddings=False)
    o.update(PRESETS[preset])
    for key in ("arch", "dim", "depth", "heads", "kv_heads", "head_dim", "mlp_hidden", "max_seq_len",
                "rope_theta", "tie_embeddings"):
        if model_cfg.get(key) is not None:
            o[key] = model_cfg[key]
    o["vocab_size"] = model_cfg.get("vocab_size") or vocab
    o["kv_heads"] = o["kv_heads"] or o["heads"]
    o["head_dim"] = o["head_dim"] or o["dim"] // o["heads"]
    if not o["mlp_hidden"]:
        o["mlp_hidden"] = 256 * -(-(2 * 4 * o["dim"] // 3) // 256) if o["arch"] == "llama" else 4 * o["dim"]
    if o["arch"] == "gpt2":
        o["tie_embeddings"] = True
    return o  # model.recompute changes memory, not results: the reference keeps every activation


def moh_blocks(model_cfg, depth):
    """None (MHA everywhere) or per block dict(shared_heads, routed_topk), lists of one value broadcast."""
    if model_cfg["attention"] == "mha":
        return None
    if model_cfg.get("moh_router", "learned") != "learned":
        fail(f"model.moh_router '{model_cfg['moh_router']}': the reference has the learned router only")
    shared, topk = model_cfg["shared_heads"], model_cfg["routed_topk"]
    per_block = lambda v: v * depth if len(v) == 1 else v  # noqa: E731
    return [dict(shared_heads=s, routed_topk=k) for s, k in zip(per_block(shared), per_block(topk))]


def initialise(model, depth):
    residual_std = INIT_STD / math.sqrt(2.0 * depth)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, residual_std if name.endswith(RESIDUAL_PROJECTIONS) and name.startswith("blocks.")
                          else INIT_STD)
            elif "norm" in name and name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()


def no_weight_decay_names(model):
    return ["pos_embed.weight"] if model.pos_embed is not None else []


def decay_exempt(name, p, exempt):
    if p.dim() <= 1:
        return True
    return any(e and (name == e or name.endswith("." + e)) for e in exempt)


def lr_at(cfg, step, total_steps):
    s = cfg["schedule"]
    base, warmup = cfg["optim"]["lr"], s["warmup_steps"]
    if step < warmup:
        return base * (step + 1) / warmup
    if s["name"] == "constant":
        return base
    span = total_steps - warmup
    u = 1.0 if span == 0 else min(1.0, (step - warmup) / span)
    if s["name"] == "linear":
        return s["min_lr"] + (base - s["min_lr"]) * (1 - u)
    return s["min_lr"] + (base - s["min_lr"]) * 0.5 * (1 + math.cos(math.pi * u))


def read_shard(path):
    header = np.fromfile(path, dtype="<i4", count=SHARD_HEADER_INTS)
    if header.size < SHARD_HEADER_INTS or (int(header[0]), int(header[1])) not in SHARD_FORMATS:
        fail(f"'{path}' is not an llm.c token shard (magic/version)", status=1)
    width = SHARD_FORMATS[(int(header[0]), int(header[1]))]
    tokens = np.memmap(path, dtype=width, mode="r", offset=SHARD_HEADER_INTS * 4)
    if tokens.size != int(header[2]):
        fail(f"'{path}': the header says {int(header[2])} tokens, the file holds {tokens.size}", status=1)
    return tokens


def split_shards(folder, split):
    paths = sorted(set(glob.glob(os.path.join(folder, f"{split}_*.bin")) +
                       glob.glob(os.path.join(folder, f"*_{split}_*.bin"))))
    if not paths:
        fail(f"no {split}_*.bin shards in '{folder}'")
    return [read_shard(p) for p in paths]


def load_char_tokenizer(path):
    with open(path) as f:
        tok = json.load(f)
    if tok.get("type") != "moh_char":
        fail(f"'{path}': the reference reads character tokenizers (type moh_char) only, not '{tok.get('type')}'")
    chars = tok["chars"]
    # id -> UTF-8 bytes of its text; the end-of-text id (len(chars)) decodes to no text.
    return len(chars) + 1, torch.tensor([len(c.encode("utf-8")) for c in chars] + [0])


class RandomWindows:
    """Windows of seq_len + 1 tokens inside one shard, every start equally likely."""

    def __init__(self, shards, seq_len, seed):
        self.shards, self.n = shards, seq_len + 1
        self.starts = torch.tensor([max(0, s.size - self.n + 1) for s in shards])
        if int(self.starts.sum()) == 0:
            fail(f"no training shard holds a window of {self.n} tokens", status=1)
        self.cumulative = self.starts.cumsum(0)
        self.gen = torch.Generator().manual_seed(seed)

    def next(self, count):
        g = torch.randint(0, int(self.cumulative[-1]), (count,), generator=self.gen)
        shard = torch.searchsorted(self.cumulative, g, right=True)
        offset = g - (self.cumulative[shard] - self.starts[shard])
        rows = [self.shards[int(s)][int(o):int(o) + self.n] for s, o in zip(shard, offset)]
        return torch.from_numpy(np.stack(rows).astype(np.int64))


def sequential_windows(shards, seq_len, limit):
    """The validation windows in order (starts 0, seq_len, ... per shard), the first `limit` (< 0: all)."""
    taken = 0
    for tokens in shards:
        for start in range(0, tokens.size - seq_len, seq_len):
            if taken == limit:
                return
            taken += 1
            yield tokens[start:start + seq_len + 1]


@torch.no_grad()
def evaluate(model, cfg, val, seq_len, byte_lengths, vocab, device):
    model.eval()
    limit = -1 if cfg["data"]["eval_tokens"] == 0 else max(1, cfg["data"]["eval_tokens"] // seq_len)
    batch, loss_sum, tokens, text_bytes = cfg["eval"]["batch_size"], 0.0, 0, 0
    windows = list(sequential_windows(val, seq_len, limit))
    if not windows:
        fail(f"the validation split has no window of {seq_len + 1} tokens", status=1)
    for b in range(0, len(windows), batch):
        ids = torch.from_numpy(np.stack(windows[b:b + batch]).astype(np.int64))
        logits, _ = model(ids[:, :-1].to(device))
        targets = ids[:, 1:].reshape(-1)
        loss_sum += F.cross_entropy(logits.reshape(-1, vocab), targets.to(device), reduction="sum").double().item()
        tokens += targets.numel()
        text_bytes += int(byte_lengths[targets].sum())
    model.train()
    loss = loss_sum / tokens
    return {"loss": loss, "perplexity": math.exp(loss), "bits_per_byte": loss_sum / math.log(2) / text_bytes,
            "tokens": tokens}


def check_supported(cfg):
    if not re.fullmatch(r"cpu|cuda(:\d+)?", cfg["device"]):
        fail(f"device: {cfg['device']}: the reference trains on cpu, cuda or cuda:N")
    if cfg["device"] != "cpu" and not torch.cuda.is_available():
        fail(f"device: {cfg['device']}: this PyTorch sees no CUDA device")
    unsupported = {"precision": (cfg["precision"], "fp32"),
                   "train.grad_accum": (cfg["train"]["grad_accum"], 1), "optim.name": (cfg["optim"]["name"], "adamw")}
    for key, (value, supported) in unsupported.items():
        if value != supported:
            fail(f"{key}: {value}: the reference trains with {key} {supported} only")
    if cfg["task"] != "llm":
        fail(f"task: {cfg['task']}: the reference trains llm configs only")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("overrides", nargs="*", help="key=value, as for `moh train`")
    ap.add_argument("--moh", default=os.environ.get("MOH", "build/moh"), help="the moh binary (default build/moh)")
    ap.add_argument("--steps", type=int, help="steps to train (default train.steps)")
    ap.add_argument("--seconds", type=float, help="stop once this much training time has passed")
    ap.add_argument("--warmup", type=int, default=5, help="steps left out of the step-time medians")
    ap.add_argument("--metrics", help="write a JSON line per train.log_every steps and the validation metrics")
    ap.add_argument("--no-eval", action="store_true", help="skip the validation pass")
    args = ap.parse_args()
    cfg = resolved_config(args.moh, args.config, args.overrides)
    check_supported(cfg)
    total_steps = args.steps or cfg["train"]["steps"]
    if not total_steps or total_steps < 1 or args.warmup < 0 or (args.seconds is not None and args.seconds <= 0):
        ap.error("--steps (or train.steps) and --seconds must be positive and --warmup >= 0")
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    torch.manual_seed(cfg["run"]["seed"])

    vocab, byte_lengths = load_char_tokenizer(cfg["data"]["tokenizer"])
    o = model_options(cfg["model"], vocab)
    seq_len = cfg["data"].get("seq_len") or o["max_seq_len"]
    if seq_len > o["max_seq_len"]:
        fail(f"data.seq_len {seq_len} exceeds model.max_seq_len {o['max_seq_len']}")
    device = torch.device(cfg["device"])
    model = LanguageModel(o, moh_blocks(cfg["model"], o["depth"])).train()
    initialise(model, o["depth"])
    model.to(device)
    exempt = no_weight_decay_names(model) + list(cfg["optim"]["no_decay"])
    named = list(model.named_parameters())
    groups = [{"params": [p for n, p in named if not decay_exempt(n, p, exempt)]},
              {"params": [p for n, p in named if decay_exempt(n, p, exempt)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=cfg["optim"]["lr"], betas=(cfg["optim"]["beta1"], cfg["optim"]["beta2"]),
                            eps=cfg["optim"]["eps"], weight_decay=cfg["optim"]["weight_decay"])
    train = RandomWindows(split_shards(cfg["data"]["dir"], "train"), seq_len, cfg["run"]["seed"])
    val = split_shards(cfg["data"]["dir"], "val")
    batch, clip, beta = cfg["train"]["batch_size"], cfg["train"]["grad_clip"], cfg["moh"]["balance_loss"]
    log_every, eval_every = cfg["train"]["log_every"], cfg["eval"]["every"]
    metrics = open(args.metrics, "w") if args.metrics else None

    step_ms, cpu_ms, losses, window_loss, window_start, stopped_by = [], [], [], [], time.perf_counter(), "steps"
    eval_seconds = 0.0  # time of the validations --metrics asks for every eval.every steps
    train_start = window_start
    step = 0
    while step < total_steps:
        start, cpu_start = time.perf_counter(), time.process_time()
        lr = lr_at(cfg, step, total_steps)
        for group in opt.param_groups:
            group["lr"] = lr
        ids = train.next(batch).to(device)
        logits, balance = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        total = loss + beta * sum(balance) / len(balance) if balance else loss
        total.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        window_loss.append(losses[-1])
        step += 1
        now = time.perf_counter()
        if step > args.warmup:
            step_ms.append((now - start) * 1e3)
            cpu_ms.append((time.process_time() - cpu_start) * 1e3)
        if metrics and (step % log_every == 0 or step == total_steps):
            metrics.write(json.dumps({"step": step, "loss": statistics.mean(window_loss), "lr": lr,
                                      "tokens_per_s": len(window_loss) * batch * seq_len / (now - window_start)})
                          + "\n")
            window_loss, window_start = [], now
        if args.seconds is not None and now - train_start - eval_seconds >= args.seconds and step < total_steps:
            stopped_by = "seconds"
            break
        if metrics and not args.no_eval and eval_every > 0 and step % eval_every == 0 and step < total_steps:
            v = evaluate(model, cfg, val, seq_len, byte_lengths, vocab, device)  # not timed (as moh's window rates)
            metrics.write(json.dumps({"step": step, **{f"eval/{k}": x for k, x in v.items()}}) + "\n")
            eval_seconds += time.perf_counter() - now
            window_start = time.perf_counter()
    train_seconds = time.perf_counter() - train_start - eval_seconds
    result = {"framework": "torch", "version": torch.__version__, "threads": torch.get_num_threads(),
              "parameters": sum(p.numel() for p in model.parameters()), "model": o,
              "attention": "mha" if cfg["model"]["attention"] == "mha" else "moh (dense gated heads)",
              "batch": batch, "seq_len": seq_len, "steps": step, "stopped_by": stopped_by,
              "train_seconds": train_seconds, "train_tokens_per_s": step * batch * seq_len / train_seconds,
              "loss_first": losses[0], "loss_last": losses[-1], "step_ms": step_ms, "cpu_ms": cpu_ms}
    if step_ms:
        med = statistics.median(step_ms)
        result.update(median_ms=med, min_ms=min(step_ms), tokens_per_s=batch * seq_len * 1e3 / med)
    if not args.no_eval:
        v = evaluate(model, cfg, val, seq_len, byte_lengths, vocab, device)
        result.update({f"val_{k}": x for k, x in v.items()})
        if metrics:
            metrics.write(json.dumps({"step": step, **{f"eval/{k}": x for k, x in v.items()}}) + "\n")
    if metrics:
        metrics.close()
    print(f"torch {torch.__version__}: {result['parameters']} parameters, {step} steps of {batch} x {seq_len} "
          f"tokens, {result['threads']} threads; "
          + (f"median {result['median_ms']:.1f} ms/step = {result['tokens_per_s']:.0f} tokens/s; " if step_ms else "")
          + f"loss {losses[0]:.4f} -> {losses[-1]:.4f}"
          + (f"; val loss {result['val_loss']:.4f}, {result['val_bits_per_byte']:.4f} bits/byte" if "val_loss" in result
             else ""))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
