#!/usr/bin/python3
"""MoH's time against its active head share at three scopes, as a table and a plot (issue 17).

    /usr/bin/python3 scripts/moh_speed_plot.py [--build-dir build] [--rounds 2] [--steps 20] [--threads 1]
        [--seqs 256,512,1024] [--out docs/results/moh_speed_plot]

Scopes, each as time over plain MHA's in the same run (every MoH variant sparse, projections Auto):
  core   build/moh_bench_attention --scope core: scores, softmax and weighted values of 32 heads of 64
         (ideal: the active share);
  layer  the same bench's --scope layer: the whole attention layer with its projections and router,
         forward + backward (ideal: its FLOP ratio, which the bench prints);
  model  one training step: the KJV character LLM of configs/llm/kjv_mha.yaml (`moh train`, 8 heads of 16,
         2 shared + top 2 / 4 / 5 routed; ideal: the models' flops_per_token from metrics.jsonl) and the
         Fashion-MNIST ViT-tiny (build/moh_bench_vit_train, the same head splits, batch 64).
--rounds alternates every measurement that many times; the ratios are of medians over the pooled steps
(the layer and core ratios: the median over rounds). The paper's Table 7 point (MoH-ViT at 50% of the
heads: 0.63x MHA's time at seq 256) is drawn beside them. Needs the KJV shards (scripts/prepare_kjv_tokens.sh)
and python3-matplotlib (scripts/setup.sh --plot). Writes <out>.md (the table) and <out>.png; prints the
table.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The rows: the attention bench's shares of 32 heads (16, 24 and 29 active) and, for the 8-head models,
# 2 shared + the top k of 6 routed (4, 6 and 7 active).
SHARES = [("50%", 2), ("75%", 4), ("90%", 5)]
MODEL_HEADS, MODEL_SHARED = 8, 2
PAPER_TABLE7 = (0.5, 0.63)


def fail(message, output=""):
    if output:
        print(output, file=sys.stderr)
    sys.exit(f"moh_speed_plot.py: {message}")


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    if out.returncode != 0:
        fail(f"{' '.join(cmd)} failed (exit {out.returncode})", out.stdout + out.stderr)
    return out.stdout


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def attention_scopes(args, env):
    """{seq: {share: {core, layer, layer_ideal}}}, medians over the rounds."""
    rounds = []
    for _ in range(args.rounds):
        out = run([os.path.join(args.build_dir, "moh_bench_attention"), "--scope", "both", "--seq", args.seqs,
                   "--reps", "3", "--json"], env)
        rounds.append(last_json(out)["by_seq"])
    table = {}
    for seq in rounds[0]:
        for share in rounds[0][seq]:
            values = [r[seq][share] for r in rounds]
            table.setdefault(int(seq), {})[share + "%"] = {
                "core": statistics.median(v["core_ratio"] for v in values),
                "layer": statistics.median(v["layer_ratio"] for v in values),
                "layer_ideal": values[0]["layer_flop_ratio"], "share": values[0]["active_share"]}
    return table


def llm_step(args, env, folder, name, attention):
    """Measured step times (ms) and FLOPs per token of one short `moh train` of the KJV LLM."""
    cmd = [os.path.join(args.build_dir, "moh"), "train", "configs/llm/kjv_mha.yaml", *attention,
           f"train.steps={args.warmup + args.steps}", "train.log_every=1", "eval.every=0", "checkpoint.every=0",
           "checkpoint.keep_last=1", "data.eval_tokens=256", "schedule.warmup_steps=0", f"threads={args.threads}",
           f"run.dir={folder}", f"run.name={name}"]
    run(cmd, env)
    with open(os.path.join(folder, name, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f]
    shutil.rmtree(os.path.join(folder, name))
    steps = [r["step_ms"] for r in records if "step_ms" in r and r["step"] > args.warmup]
    return steps, next(r["flops_per_token"] for r in records if "flops_per_token" in r)


def vit_step(args, env, moh):
    cmd = [os.path.join(args.build_dir, "moh_bench_vit_train"), "--batch", "64", "--threads", str(args.threads),
           "--steps", str(args.steps), "--warmup", str(args.warmup)]
    if moh:
        cmd += ["--moh", "--shared", str(MODEL_SHARED), "--topk", str(moh)]
    return last_json(run(cmd, env))["step_ms"]


def model_scope(args, env):
    """{share: {llm, llm_ideal, vit}} and MHA's medians, steps pooled over the rounds."""
    folder = tempfile.mkdtemp(prefix="moh_speed_plot_")
    variants = [("MHA", None)] + SHARES
    llm = {name: [] for name, _ in variants}
    vit = {name: [] for name, _ in variants}
    flops = {}
    try:
        for r in range(args.rounds):
            for name, topk in variants:
                attention = ["model.attention=mha"] if topk is None else [
                    "model.attention=moh", f"model.shared_heads=[{MODEL_SHARED}]", f"model.routed_topk=[{topk}]"]
                steps, flops[name] = llm_step(args, env, folder, f"llm_{r}_{name.rstrip('%')}", attention)
                llm[name] += steps
                vit[name] += vit_step(args, env, topk)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    mha_llm, mha_vit = statistics.median(llm["MHA"]), statistics.median(vit["MHA"])
    table = {name: {"llm": statistics.median(llm[name]) / mha_llm, "llm_ideal": flops[name] / flops["MHA"],
                    "vit": statistics.median(vit[name]) / mha_vit} for name, _ in SHARES}
    return table, mha_llm, mha_vit


def model_share(topk):
    return (MODEL_SHARED + topk) / MODEL_HEADS


def markdown(attention, model, mha_llm, mha_vit, args):
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                   platform.processor())
    lines = [f"Time over MHA's in the same run; {cpu}, {args.threads} thread(s); {args.rounds} rounds alternated. "
             "Core and layer: "
             "32 heads of 64, 4 shared (16 / 24 / 29 active: 50 / 75 / 90.6%); model: 8 heads of 16, 2 shared + "
             "top 2 / 4 / 5 of 6 (50 / 75 / 87.5% active; the row says 90%). "
             f"MHA's model steps: LLM {mha_llm:.1f} ms, ViT {mha_vit:.1f} ms "
             "(medians).", "",
             "| active | " + " | ".join(f"core {s}" for s in sorted(attention)) + " | core ideal | "
             + " | ".join(f"layer {s} (ideal)" for s in sorted(attention)) + " | LLM step (ideal) | ViT step |",
             "| --- " * (2 + 2 * len(attention)) + "| --- | --- |"]
    for share, _ in SHARES:
        row = [share] + [f"{attention[s][share]['core']:.3f}" for s in sorted(attention)]
        row.append(f"{attention[min(attention)][share]['share']:.3f}")
        row += [f"{attention[s][share]['layer']:.3f} ({attention[s][share]['layer_ideal']:.3f})"
                for s in sorted(attention)]
        m = model[share]
        row += [f"{m['llm']:.3f} ({m['llm_ideal']:.3f})", f"{m['vit']:.3f}"]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"Paper (Table 7, MoH-ViT at 50% of the heads, seq 256): {PAPER_TABLE7[1]:.2f}x MHA's time."]
    return "\n".join(lines) + "\n"


def plot(attention, model, path):
    fig, ax = plt.subplots(figsize=(7.5, 5))
    first = min(attention)
    x = [attention[first][s]["share"] for s, _ in SHARES]
    xm = [model_share(k) for _, k in SHARES]
    for seq in sorted(attention):
        ax.plot(x, [attention[seq][s]["core"] for s, _ in SHARES], "o-", label=f"core, seq {seq}")
    for seq in sorted(attention):
        ax.plot(x, [attention[seq][s]["layer"] for s, _ in SHARES], "s-", label=f"layer, seq {seq}")
    ax.plot(x, [attention[first][s]["layer_ideal"] for s, _ in SHARES], "k:",
            label=f"layer FLOP ideal (seq {first})")
    ax.plot(xm, [model[s]["llm"] for s, _ in SHARES], "^-", label="LLM training step (KJV, 8 x 16)")
    ax.plot(xm, [model[s]["llm_ideal"] for s, _ in SHARES], "^:", color="grey", label="LLM FLOP ideal")
    ax.plot(xm, [model[s]["vit"] for s, _ in SHARES], "v-", label="ViT-tiny training step (8 x 16)")
    ax.plot([0.45, 1.0], [0.45, 1.0], "k--", linewidth=0.8, label="core ideal (the share)")
    ax.plot(*PAPER_TABLE7, "r*", markersize=14, label="paper, Table 7 (MoH-ViT, seq 256)")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("active head share")
    ax.set_ylabel("time / MHA's time")
    ax.set_title("MoH time against its active head share (moh, CPU)")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("MOH_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seqs", default="256,512,1024")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "results", "moh_speed_plot"))
    args = ap.parse_args()
    if min(args.rounds, args.steps, args.threads) < 1 or args.warmup < 0:
        ap.error("--rounds, --steps and --threads must be positive and --warmup >= 0")
    for program in ("moh", "moh_bench_attention", "moh_bench_vit_train"):
        if not os.access(os.path.join(args.build_dir, program), os.X_OK):
            fail(f"{args.build_dir}/{program} is not built (cmake --build {args.build_dir})")
    if not os.path.isfile(os.path.join(ROOT, "corpora", "kjv_char", "meta.json")):
        fail("corpora/kjv_char has no shards: run scripts/prepare_kjv_tokens.sh")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    model, mha_llm, mha_vit = model_scope(args, env)
    attention = attention_scopes(args, env)
    text = markdown(attention, model, mha_llm, mha_vit, args)
    with open(args.out + ".md", "w") as f:
        f.write(text)
    plot(attention, model, args.out + ".png")
    print(text + f"wrote {args.out}.md and {args.out}.png")


if __name__ == "__main__":
    main()
