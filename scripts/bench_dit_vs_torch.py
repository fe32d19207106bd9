#!/usr/bin/python3
"""DiT training throughput, moh vs PyTorch (scripts/bench_vs_torch.sh --dit runs this).

    scripts/bench_vs_torch.sh --dit [--batch 128] [--steps 20] [--warmup 3] [--threads 1] [--heads 8]
        [--moh [--shared 4] [--topk 2]] [--rounds 3] [--wait-policy passive] [--malloc keep]
        [--build-dir build]

Times the same DiT training step on both sides: build/moh_bench_dit_train (MHA, and with --moh also MoH
attention: --shared heads + the top --topk routed, sparse execution) and, in this process, PyTorch with the
twin model of tests/reference/dit_reference.py built from the shape moh_bench_dit_train --config-only prints
(never written here), always MHA (the reference for moh's MoH run too). The PyTorch step is moh's: fresh
uniform timesteps and noise, q_sample, forward with 10% of the labels forced to the null class, the mean of
improved-diffusion's training loss (MSE + the variational bound with the mean detached, learned sigma, 1000
linear steps; tests/reference/make_diffusion_fixture.py's transcription, its tables in float32), backward,
AdamW with the config's lr and weight decay. PyTorch initialises with its default init, not DiT's zero
adaLN/final layers (the same work per step). --rounds R alternates the runs R times and pools their steps (a
shared machine's load drifts). Both sides get OMP_NUM_THREADS = --threads (PyTorch also torch.set_num_threads)
and the same OMP_WAIT_POLICY: --wait-policy (active, passive, or unset), else the environment's, else passive
(as scripts/bench_vs_torch.sh). --malloc keep (the default) runs both sides with glibc malloc keeping freed
memory (bench_llm_vs_torch.py's KEEP_FREED_MEMORY; this script re-executes itself to set it, glibc reads it at
start-up; that script says why): in short trials here it made PyTorch's forward faster, by a margin the shared
machine's noise blurs. Prints a table of medians over every measured step (ms/step, samples/s;
forward/backward/optimizer ms and the CPU ms of all threads per step: medians of the rounds' medians), the
ratio moh/torch of samples/s and torch/moh of CPU ms (> 1: moh is faster; the CPU ratio is less sensitive to
other jobs on the machine); exits 1 when a run fails or moh's MHA model and PyTorch's differ in parameter
count.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
from bench_llm_vs_torch import KEEP_FREED_MEMORY  # noqa: E402

# Medians of one run's steps, as moh_bench_dit_train's JSON has them.
PARTS = ("forward_ms", "backward_ms", "optimizer_ms", "cpu_ms")


def fail(message, output=""):
    if output:
        print(output, file=sys.stderr)
    sys.exit(f"bench_vs_torch.sh --dit: {message}")


def moh_run(cmd):
    """The JSON last line of one moh_bench_dit_train run (its other lines are echoed)."""
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"moh_bench_dit_train failed (exit {out.returncode}): {' '.join(cmd)}", out.stdout + out.stderr)
    lines = out.stdout.strip().splitlines()
    for line in lines[:-1]:
        print(line)
    return json.loads(lines[-1])


def torch_run(c, steps, warmup):
    """Per-step times of PyTorch's DiT training step for moh's config c (same fields as moh's JSON)."""
    import torch
    from dit_reference import DiT
    from make_diffusion_fixture import linear_betas, make_tables, per_sample, training_losses

    if c["schedule"] != "linear":
        fail(f"only the linear schedule is mirrored here, moh ran {c['schedule']}")
    torch.manual_seed(1234)
    model = DiT(input_size=c["input_size"], patch_size=c["patch_size"], in_channels=c["in_channels"], dim=c["dim"],
                depth=c["depth"], heads=c["heads"], mlp_ratio=c["mlp_ratio"],
                class_dropout_prob=c["class_dropout_prob"], num_classes=c["num_classes"],
                learn_sigma=c["learn_sigma"]).train()
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], weight_decay=c["weight_decay"])
    tab = {k: v.float() for k, v in make_tables(linear_betas(c["diffusion_steps"])).items()}
    b, side = c["batch"], c["input_size"]
    latents = torch.randn(b, c["in_channels"], side, side)
    labels = torch.randint(0, c["num_classes"], (b,))
    times = {key: [] for key in ("step_ms", *PARTS)}
    losses = []
    for s in range(warmup + steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        t = torch.randint(0, c["diffusion_steps"], (b,))
        noise = torch.randn_like(latents)
        x_t = per_sample(tab["sqrt_alphas_cumprod"], t, 4) * latents + \
            per_sample(tab["sqrt_one_minus_alphas_cumprod"], t, 4) * noise
        drop = (torch.rand(b) < c["class_dropout_prob"]).long()
        out, _ = model(x_t, t.float(), labels, drop)
        loss = training_losses(tab, out, latents, t, noise, rescaled=False)[3].mean()
        forward_end = time.perf_counter()
        loss.backward()
        backward_end = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        end, cpu_end = time.perf_counter(), time.process_time()
        if s >= warmup:
            for key, ms in (("step_ms", end - start), ("forward_ms", forward_end - start),
                            ("backward_ms", backward_end - forward_end), ("optimizer_ms", end - backward_end),
                            ("cpu_ms", cpu_end - cpu_start)):
                times[key].append(ms * 1e3)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: median "
          f"{statistics.median(times['step_ms']):.2f} ms/step (loss {losses[0]:.4f} -> {losses[-1]:.4f})")
    medians = {key: statistics.median(times[key]) for key in PARTS}
    return dict(medians, step_ms=times["step_ms"], parameters=sum(p.numel() for p in model.parameters()))


def pooled(rounds):
    """The step's median over every measured step of every round; the parts' medians of the rounds' medians."""
    out = {key: statistics.median(r[key] for r in rounds) for key in PARTS}
    out["step_ms"] = statistics.median(ms for r in rounds for ms in r["step_ms"])
    return out


def moh_label(c):
    if c["attention"] == "mha":
        return "MHA"
    return f"MoH {c['shared_heads']} shared + top-{c['routed_topk']} routed"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--moh", action="store_true", help="also time moh with MoH attention")
    ap.add_argument("--shared", default="4", help="MoH shared heads: one value or one per block")
    ap.add_argument("--topk", default="2", help="MoH routed heads kept per token: one value or one per block")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wait-policy", default=os.environ.get("OMP_WAIT_POLICY", "passive"),
                    choices=["active", "passive", "unset"])
    ap.add_argument("--malloc", choices=("keep", "default"), default="keep",
                    help="keep: glibc keeps freed memory (KEEP_FREED_MEMORY) for both sides; default: as is")
    ap.add_argument("--build-dir", default=os.environ.get("MOH_BUILD_DIR", os.path.join(ROOT, "build")))
    a = ap.parse_args()
    if a.steps < 1 or a.warmup < 0 or a.threads < 1 or a.rounds < 1 or a.batch < 1:
        ap.error("--steps, --threads, --rounds and --batch must be positive and --warmup >= 0")
    if a.malloc == "keep" and any(os.environ.get(k) != v for k, v in KEEP_FREED_MEMORY.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **KEEP_FREED_MEMORY})
    # Before torch loads its OpenMP runtime, which reads them once.
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    if a.wait_policy == "unset":
        os.environ.pop("OMP_WAIT_POLICY", None)
    else:
        os.environ["OMP_WAIT_POLICY"] = a.wait_policy
    import torch
    torch.set_num_threads(a.threads)

    bench = os.path.join(a.build_dir, "moh_bench_dit_train")
    if not os.access(bench, os.X_OK):
        fail(f"{bench} not found; build it: ninja -C {a.build_dir} moh_bench_dit_train")
    common = [bench, "--batch", str(a.batch), "--steps", str(a.steps), "--warmup", str(a.warmup),
              "--threads", str(a.threads), "--heads", str(a.heads)]
    sides = {"mha": common}
    if a.moh:
        sides["moh"] = common + ["--moh", "--shared", a.shared, "--topk", a.topk]
    configs = {name: moh_run(cmd + ["--config-only"]) for name, cmd in sides.items()}
    moh_rounds = {name: [] for name in sides}
    torch_rounds = []
    for r in range(1, a.rounds + 1):
        for name, cmd in sides.items():
            print(f"== moh {moh_label(configs[name])}, round {r} of {a.rounds}")
            moh_rounds[name].append(moh_run(cmd))
        print(f"== torch MHA, round {r} of {a.rounds}")
        torch_rounds.append(torch_run(configs["mha"], a.steps, a.warmup))
    if moh_rounds["mha"][0]["parameters"] != torch_rounds[0]["parameters"]:
        fail(f"parameter counts differ: moh {moh_rounds['mha'][0]['parameters']}, "
             f"torch {torch_rounds[0]['parameters']}")

    c = configs["mha"]
    t = pooled(torch_rounds)
    torch_rate = a.batch * 1e3 / t["step_ms"]
    print(f"\nDiT {c['preset']} ({c['in_channels']} x {c['input_size']} x {c['input_size']} latents, patch "
          f"{c['patch_size']}, dim {c['dim']}, depth {c['depth']}, heads {c['heads']}, learned sigma, "
          f"{moh_rounds['mha'][0]['parameters']} parameters with MHA), batch {a.batch}, fp32 AdamW, MSE + vb, "
          f"{a.threads} threads (OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, malloc {a.malloc}); "
          f"{a.rounds} rounds x {a.steps} steps after {a.warmup} warm-up each, medians over all rounds' steps; torch "
          f"{torch.__version__}; moh BLAS kernels {moh_rounds['mha'][0]['blas_core']}")
    print("| side | attention | ms/step | samples/s | forward ms | backward ms | optimizer ms | CPU ms | "
          "moh/torch samples/s | torch/moh CPU ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in sides:
        m = pooled(moh_rounds[name])
        rate = a.batch * 1e3 / m["step_ms"]
        print(f"| moh | {moh_label(configs[name])} | {m['step_ms']:.1f} | {rate:.1f} | {m['forward_ms']:.1f} | "
              f"{m['backward_ms']:.1f} | {m['optimizer_ms']:.1f} | {m['cpu_ms']:.1f} | {rate / torch_rate:.2f} | "
              f"{t['cpu_ms'] / m['cpu_ms']:.2f} |")
    print(f"| torch | MHA | {t['step_ms']:.1f} | {torch_rate:.1f} | {t['forward_ms']:.1f} | {t['backward_ms']:.1f} | "
          f"{t['optimizer_ms']:.1f} | {t['cpu_ms']:.1f} | 1.00 | 1.00 |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
