#!/usr/bin/python3
"""LLM training throughput, moh vs PyTorch (scripts/bench_vs_torch.sh --llm runs this).

    scripts/bench_vs_torch.sh --llm [--config configs/llm/kjv_mha.yaml] [--steps 20] [--warmup 3]
        [--batch B] [--threads 2] [--moh [--shared 2] [--topk 2]] [--rounds 1] [--wait-policy passive]
        [--device cpu|cuda] [--build-dir build] [key=value ...]

Trains the same llm config (the key=value overrides apply to both sides) for --warmup + --steps steps:
`moh train` with MHA attention (step_ms of every step from metrics.jsonl, train.log_every 1) and
tests/reference/train_llm_reference.py (PyTorch MHA, the same model, data windows, AdamW and batch);
with --moh also `moh train` with MoH attention (--shared heads + the top --topk routed, sparse
execution), whose step time over MHA's is printed beside its FLOP ideal (the models' flops_per_token).
Both sides draw their training windows from the shards each step, so the times include data; validation
is cut to one window (data.eval_tokens) and is not timed. --rounds R alternates the
runs R times and pools their steps (a shared machine's load drifts). Threads: the config's `threads`
and OMP_NUM_THREADS both set to --threads; OMP_WAIT_POLICY as in scripts/bench_vs_torch.sh.
CPU ms: the mean CPU time (all threads) of a measured step, less sensitive than wall time to other
jobs on the machine: PyTorch's per step (time.process_time), moh's from the process's CPU time less
that of the same run stopped after the warm-up (each moh round runs that short run too).
--device cuda trains both sides on the GPU (`device=cuda`; PyTorch through the python3 running this script,
each step ending at loss.item()); the CPU columns then count host time only.
--malloc keep (the default) runs both sides with glibc malloc keeping freed memory (see KEEP_FREED_MEMORY).
Prints a table of medians (ms/step, tokens/s, fastest step), CPU ms and the ratios; exits 1 when a run fails
or when moh's and PyTorch's MHA models do not have the same parameter count.
"""

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

import yaml

# glibc malloc settings that keep freed blocks (up to its 32 MiB mmap ceiling) for reuse instead of
# returning them to the kernel. PyTorch's CPU tensors come from malloc and are freed after each op; where
# page faults are expensive (a VM handing pages back to its host) re-faulting them dominated PyTorch's
# step (10x at the KJV shape), while moh's allocator caches its blocks.
KEEP_FREED_MEMORY = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "4294967296",
                     "MALLOC_TOP_PAD_": "1073741824"}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "tests", "reference", "train_llm_reference.py")


def fail(message, output=""):
    if output:
        print(output, file=sys.stderr)
    sys.exit(f"bench_vs_torch.sh --llm: {message}")


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd, env, what):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        fail(f"{what} failed (exit {out.returncode}): {' '.join(cmd)}", out.stdout + out.stderr)
    return out.stdout


def moh_run(args, overrides, attention, env, folder, name):
    """Step times (ms, after the warm-up), CPU ms per measured step and parameter count of one `moh train`.
    CPU: the process's CPU time (all threads) less that of the same run stopped after the warm-up, which
    also cancels start-up, the one-window validation and the checkpoint."""
    cmd = [args.moh, "train", args.config, *overrides, f"run.dir={folder}", *attention]
    cpu_start = children_cpu_seconds()
    run(cmd + [f"run.name={name}_warmup", f"train.steps={args.warmup}"], env, f"moh train ({name}, warm-up only)")
    cpu_mid = children_cpu_seconds()
    run(cmd + [f"run.name={name}"], env, f"moh train ({name})")
    cpu_ms = ((children_cpu_seconds() - cpu_mid) - (cpu_mid - cpu_start)) * 1e3 / args.steps
    with open(os.path.join(folder, name, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f]
    step_ms = [r["step_ms"] for r in records if "step_ms" in r and r["step"] > args.warmup]
    with open(os.path.join(folder, name, "train.log")) as f:
        params = re.search(r"model has (\d+) parameters", f.read())
    if len(step_ms) != args.steps or not params:
        fail(f"moh train ({name}) logged {len(step_ms)} of {args.steps} measured steps")
    flops = next(r["flops_per_token"] for r in records if "flops_per_token" in r)  # the model's FLOPs per token
    return {"step_ms": step_ms, "cpu_ms_mean": cpu_ms, "parameters": int(params.group(1)), "flops_per_token": flops}


def torch_run(args, overrides, env):
    out = run([sys.executable, REFERENCE, args.config, *overrides, "--moh", args.moh,
               "--steps", str(args.warmup + args.steps), "--warmup", str(args.warmup), "--no-eval"],
              env, "tests/reference/train_llm_reference.py")
    return json.loads(out.strip().splitlines()[-1])


def cpu_ms_per_step(result):
    """moh runs carry the mean already; PyTorch runs each step's CPU time."""
    return result["cpu_ms_mean"] if "cpu_ms_mean" in result else statistics.mean(result["cpu_ms"])


def summary(runs, tokens_per_step):
    step_ms = [t for r in runs for t in r["step_ms"]]
    med = statistics.median(step_ms)
    return {"median_ms": med, "min_ms": min(step_ms), "tokens_per_s": tokens_per_step * 1e3 / med,
            "cpu_ms": statistics.mean(cpu_ms_per_step(r) for r in runs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/llm/kjv_mha.yaml")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, help="windows per step (default: the config's train.batch_size)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--moh", dest="with_moh", action="store_true", help="also time moh with MoH attention")
    ap.add_argument("--shared", default="2")
    ap.add_argument("--topk", default="2")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N, for both sides")
    ap.add_argument("--malloc", choices=("keep", "default"), default="keep",
                    help="keep: glibc keeps freed memory (KEEP_FREED_MEMORY) for both sides; default: as is")
    ap.add_argument("--wait-policy", default=os.environ.get("OMP_WAIT_POLICY", "passive"))
    ap.add_argument("--build-dir", default=os.environ.get("MOH_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("overrides", nargs="*", help="key=value for both sides")
    args = ap.parse_args()
    if min(args.steps, args.batch or 1, args.threads, args.rounds, args.warmup) < 1:
        ap.error("--steps, --warmup, --batch, --threads and --rounds must be positive")
    if any("=" not in o for o in args.overrides):
        ap.error(f"overrides are key=value, got {[o for o in args.overrides if '=' not in o]}")
    args.moh = os.path.join(args.build_dir, "moh")
    if not os.access(args.moh, os.X_OK):
        fail(f"{args.moh} not found; build it: ninja -C {args.build_dir} moh")

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    if args.malloc == "keep":
        env.update(KEEP_FREED_MEMORY)
    if args.wait_policy == "unset":
        env.pop("OMP_WAIT_POLICY", None)
    else:
        env["OMP_WAIT_POLICY"] = args.wait_policy
    # The timed shape for both sides; validation cut to one window; nothing but the final checkpoint.
    cfg = yaml.safe_load(run([args.moh, "config", args.config, *args.overrides], env, "moh config"))
    seq_len = cfg["data"]["seq_len"] or cfg["model"]["max_seq_len"]
    args.batch = args.batch or cfg["train"]["batch_size"]
    overrides = [*args.overrides, f"train.steps={args.warmup + args.steps}", f"train.batch_size={args.batch}",
                 f"threads={args.threads}", f"device={args.device}", "train.log_every=1", "eval.every=0", "checkpoint.every=0",
                 "checkpoint.keep_last=1", f"data.eval_tokens={seq_len}", "schedule.warmup_steps=0"]
    mha = ["model.attention=mha"]
    moh_attention = ["model.attention=moh", f"model.shared_heads=[{args.shared}]",
                     f"model.routed_topk=[{args.topk}]", "model.moh_execution=sparse"]

    folder = tempfile.mkdtemp(prefix="moh_bench_llm_")
    results = {"moh_mha": [], "moh_moh": [], "torch": []}
    try:
        for r in range(1, args.rounds + 1):
            print(f"== round {r} of {args.rounds}: moh MHA", flush=True)
            results["moh_mha"].append(moh_run(args, overrides, mha, env, folder, f"mha_{r}"))
            print(run_line(results["moh_mha"][-1]), flush=True)
            print(f"== round {r} of {args.rounds}: torch MHA (tests/reference/train_llm_reference.py)", flush=True)
            results["torch"].append(torch_run(args, overrides + mha, env))
            print(run_line(results["torch"][-1]), flush=True)
            if args.with_moh:
                print(f"== round {r} of {args.rounds}: moh MoH", flush=True)
                results["moh_moh"].append(moh_run(args, overrides, moh_attention, env, folder, f"moh_{r}"))
                print(run_line(results["moh_moh"][-1]), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    if results["moh_mha"][0]["parameters"] != results["torch"][0]["parameters"]:
        fail(f"the models differ: moh has {results['moh_mha'][0]['parameters']} parameters, PyTorch "
             f"{results['torch'][0]['parameters']} (tests/reference/train_llm_reference.py's PRESETS out of date?)")
    tokens = args.batch * seq_len
    rows = [("moh", "MHA", summary(results["moh_mha"], tokens))]
    if args.with_moh:
        h, s, k = results["torch"][0]["model"]["heads"], int(args.shared), int(args.topk)
        rows.append(("moh", f"MoH {s} shared + top-{k} of {h - s} ({100 * (s + k) / h:.0f}% heads)",
                     summary(results["moh_moh"], tokens)))
    rows.append(("torch", f"MHA (torch {results['torch'][0]['version']})", summary(results["torch"], tokens)))
    m = results["torch"][0]["model"]
    print(f"\nLLM {args.config} ({m['arch']}, dim {m['dim']}, depth {m['depth']}, heads {m['heads']}, "
          f"{results['torch'][0]['parameters']} parameters), batch {args.batch} x {seq_len} tokens, fp32 AdamW on "
          f"{args.device}, "
          f"{args.threads} threads (OMP_WAIT_POLICY={env.get('OMP_WAIT_POLICY', 'unset')}, malloc {args.malloc}); "
          f"{args.rounds} x "
          f"{args.steps} steps after {args.warmup} warm-up each, data sampling included")
    print(f"{'framework':<10} {'attention':<42} {'ms/step':>9} {'tokens/s':>9} {'best ms':>8} {'CPU ms':>8}")
    for framework, label, s in rows:
        print(f"{framework:<10} {label:<42} {s['median_ms']:9.1f} {s['tokens_per_s']:9.0f} {s['min_ms']:8.1f} "
              f"{s['cpu_ms']:8.1f}")
    def ratio(a, b):  # a's speed over b's: median steps, fastest (least disturbed) steps, CPU time per step
        return (f"{b['median_ms'] / a['median_ms']:.3f} (fastest steps {b['min_ms'] / a['min_ms']:.3f}, "
                f"CPU time {b['cpu_ms'] / a['cpu_ms']:.3f})")
    print(f"speed ratio moh MHA / torch: {ratio(rows[0][2], rows[-1][2])}")
    if args.with_moh:
        ideal = results["moh_moh"][0]["flops_per_token"] / results["moh_mha"][0]["flops_per_token"]
        print(f"speed ratio moh MoH / torch: {ratio(rows[1][2], rows[-1][2])}; "
              f"moh MoH / moh MHA: {ratio(rows[1][2], rows[0][2])}")
        print(f"moh MoH step time / moh MHA: {rows[1][2]['median_ms'] / rows[0][2]['median_ms']:.3f}, FLOP ideal "
              f"{ideal:.3f} (the model's FLOPs per token, MoH's active heads only, over MHA's)")


def run_line(result):
    return (f"{result['parameters']} parameters, median {statistics.median(result['step_ms']):.1f} ms/step, "
            f"fastest {min(result['step_ms']):.1f} ms, CPU {cpu_ms_per_step(result):.1f} ms/step")


if __name__ == "__main__":
    main()
