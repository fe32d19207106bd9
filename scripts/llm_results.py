#!/usr/bin/python3
"""Summarises scripts/reproduce_llm.sh runs into a Markdown table, a loss-curve PNG and a head-usage heatmap.

    /usr/bin/python3 scripts/llm_results.py --runs runs/reproduce_llm --configs "kjv_mha kjv_moh kjv_moh50" \
        --seeds "0 1" [--torch] --out docs/results/llm_kjv

Reads <runs>/<config>_s<seed>/{eval.json,metrics.jsonl,config.yaml,head_usage.json} (moh runs) and, with
--torch, <runs>/torch_mha_s<seed>/{result.json,metrics.jsonl} (tests/reference/train_llm_reference.py).
Per config: validation loss and bits per byte of the final checkpoint (mean +- sample std over seeds),
the active-head share, training tokens/s (median over the logged windows, data and the validations
between them included). Writes <out>.md, <out>_loss.png (training loss per logged window and validation
loss, means over seeds) and <out>_heads.png (per block and head, the share of validation tokens that
selected the head, means over seeds; MoH configs only). Needs python3-matplotlib (scripts/setup.sh --plot).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fail(message):
    sys.exit(f"llm_results.py: {message}")


def read_json(path):
    if not os.path.isfile(path):
        fail(f"{path} is missing (did the run finish?)")
    with open(path) as f:
        return json.load(f)


def read_metrics(folder):
    """Training loss per logged window, validation loss points, tokens/s per window, active-head share."""
    train, val, rates, heads = [], [], [], None
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if "eval/loss" in r:
                val.append((r["step"], r["eval/loss"]))
            elif "loss" in r:
                train.append((r["step"], r["loss"]))
                rates.append(r["tokens_per_s"])
                heads = r.get("active_heads", heads)
    if not train:
        fail(f"{folder}/metrics.jsonl holds no training records")
    return train, val, statistics.median(rates), heads


def moh_run(folder):
    final = read_json(os.path.join(folder, "eval.json"))
    train, val, rate, _ = read_metrics(folder)
    usage = read_json(os.path.join(folder, "head_usage.json"))
    return {"loss": final["loss"], "bpb": final["bits_per_byte"], "heads": final["active_heads"], "rate": rate,
            "train": train, "val": val, "usage": usage["moh_blocks"]}


def torch_run(folder):
    result = read_json(os.path.join(folder, "result.json"))
    train, val, rate, _ = read_metrics(folder)
    return {"loss": result["val_loss"], "bpb": result["val_bits_per_byte"], "heads": 1.0, "rate": rate,
            "train": train, "val": val, "usage": []}


def mean_std(values):
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def mean_curve(curves):
    n = min(len(c) for c in curves)
    return [c[0] for c in curves[0][:n]], [statistics.mean(c[i][1] for c in curves) for i in range(n)]


def attention_label(folder):
    with open(os.path.join(folder, "config.yaml")) as f:
        cfg = f.read()

    def value(key):
        return next((line.split(":", 1)[1].strip() for line in cfg.splitlines()
                     if line.strip().startswith(key + ":")), "?")
    if value("attention") == "mha":
        return "MHA"
    shared, topk = value("shared_heads").strip("[]"), value("routed_topk").strip("[]")
    return f"MoH {shared} shared + top {topk} routed of the rest"


def plot_losses(groups, seeds, path):
    fig = plt.figure(figsize=(7.5, 4.5))
    for i, (name, runs) in enumerate(groups):
        color = f"C{i}"
        steps, loss = mean_curve([r["train"] for r in runs])
        plt.plot(steps, loss, color=color, alpha=0.6, linewidth=1, label=f"{name} train")
        if all(r["val"] for r in runs):
            steps, loss = mean_curve([r["val"] for r in runs])
            plt.plot(steps, loss, color=color, marker="o", markersize=4, linestyle="--", label=f"{name} validation")
    plt.xlabel("optimizer step")
    plt.ylabel(f"cross-entropy per character (mean of {len(seeds)} seeds)")
    plt.title("KJV character LLM: MHA vs MoH")
    lows = [min(l for _, l in r["train"]) for _, runs in groups for r in runs]
    plt.ylim(max(0.0, min(lows) - 0.1), min(lows) + 1.5)
    plt.grid(alpha=0.3)
    plt.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_head_usage(groups, path):
    """One heatmap per MoH config: blocks x heads, selection rate averaged over seeds."""
    moh = [(name, runs) for name, runs in groups if runs[0]["usage"]]
    if not moh:
        return False
    fig, axes = plt.subplots(1, len(moh), figsize=(4.2 * len(moh), 3.4), squeeze=False)
    for ax, (name, runs) in zip(axes[0], moh):
        blocks = [b["block"] for b in runs[0]["usage"]]
        grid = [[statistics.mean(r["usage"][i]["selection_rate"][h] for r in runs)
                 for h in range(len(runs[0]["usage"][i]["selection_rate"]))] for i in range(len(blocks))]
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i, row in enumerate(grid):
            for h, rate in enumerate(row):
                ax.text(h, i, f"{rate:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if rate > 0.6 else "white")
        ax.set_xticks(range(len(grid[0])))
        ax.set_yticks(range(len(blocks)), [str(b) for b in blocks])
        ax.set_xlabel("head (shared first)")
        ax.set_ylabel("block")
        ax.set_title(name, fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.85, label="share of validation tokens")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return True


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--seeds", required=True)
    ap.add_argument("--torch", action="store_true", help="add the PyTorch reference runs (torch_mha_s<seed>)")
    ap.add_argument("--out", required=True, help="output path without extension")
    args = ap.parse_args()
    configs, seeds = args.configs.split(), args.seeds.split()

    groups, labels = [], {}
    for config in configs:
        groups.append((config, [moh_run(os.path.join(args.runs, f"{config}_s{s}")) for s in seeds]))
        labels[config] = attention_label(os.path.join(args.runs, f"{config}_s{seeds[0]}"))
    if args.torch:
        groups.append(("torch_mha", [torch_run(os.path.join(args.runs, f"torch_mha_s{s}")) for s in seeds]))
        labels["torch_mha"] = "MHA, PyTorch reference (tests/reference/train_llm_reference.py)"

    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    base = os.path.basename(args.out)
    plot_losses(groups, seeds, args.out + "_loss.png")
    heatmap = plot_head_usage(groups, args.out + "_heads.png")

    first = os.path.join(args.runs, f"{configs[0]}_s{seeds[0]}")
    with open(os.path.join(first, "config.yaml")) as f:
        cfg = f.read()

    def key(section, name):
        current = None
        for line in cfg.splitlines():
            if line and not line.startswith(" "):
                current = line.rstrip(":")
            elif current == section and line.strip().startswith(name + ":"):
                return line.split(":", 1)[1].strip()
        return "?"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    mha = next((runs for name, runs in groups if name == "kjv_mha"), None)
    mha_bpb = statistics.mean(r["bpb"] for r in mha) if mha else None
    lines = [
        "# KJV character LLM: MHA vs MoH",
        "",
        f"Generated by `scripts/reproduce_llm.sh` (commit {commit}, {cpu_model()}, {os.cpu_count()} CPUs): every "
        f"config trained with the same budget ({key('train', 'steps')} steps of {key('train', 'batch_size')} windows "
        f"of {key('data', 'seq_len')} characters, AdamW, warm-up {key('schedule', 'warmup_steps')} steps then "
        f"cosine) for seeds {', '.join(seeds)}, one thread per run, two runs at a time; the final checkpoint "
        "evaluated on the whole validation split (Jude and Revelation). Bits per byte: summed cross-entropy / ln 2 "
        "over the UTF-8 bytes of the predicted text. Tokens/s: median training throughput of the logged windows "
        "(data sampling included).",
        "",
        "| config | attention | active heads | val loss (mean ± std) | bits/byte (mean ± std) | bits/byte per seed "
        "| Δ bits/byte vs MHA | train tokens/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, runs in groups:
        loss, loss_std = mean_std([r["loss"] for r in runs])
        bpb, bpb_std = mean_std([r["bpb"] for r in runs])
        delta = f"{bpb - mha_bpb:+.4f}" if mha_bpb is not None else "n/a"
        per_seed = ", ".join(f"{r['bpb']:.4f}" for r in runs)
        lines.append(f"| {name} | {labels[name]} | {100 * runs[0]['heads']:.1f}% | {loss:.4f} ± {loss_std:.4f} | "
                     f"{bpb:.4f} ± {bpb_std:.4f} | {per_seed} | {delta} | "
                     f"{statistics.median(r['rate'] for r in runs):.0f} |")
    lines += ["", f"![loss curves]({base}_loss.png)", ""]
    if heatmap:
        lines += ["Head usage: per MoH block (rows) and head (columns, the shared heads first), the share of "
                  "validation tokens whose attention ran the head (`moh eval RUN eval.head_usage=FILE`), mean "
                  "over seeds.", "", f"![head usage]({base}_heads.png)", ""]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
