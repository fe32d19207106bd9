#!/usr/bin/python3
"""One training step of the latent autoencoder, moh vs PyTorch (float32, CPU, same threads, same model).

    /usr/bin/python3 scripts/bench_autoencoder_vs_torch.py [--preset fmnist] [--batch 32] [--size 32]
        [--reps 5] [--warmup 1] [--threads 1] [--rounds 2] [--build-dir build]

Runs build/moh_bench_autoencoder --json, then times the same step in PyTorch with the twin model of
tests/reference/autoencoder_reference.py (same layers, names and loss: L1 + 1e-6 KL of a posterior
sample): encoder forward, decoder forward, backward and the whole step, median over --reps after --warmup.
--rounds R alternates moh and PyTorch R times and keeps each side's best step median (a shared machine's
load drifts). Both get OMP_NUM_THREADS = --threads. Prints a markdown table with the ratio PyTorch / moh
of the step time (> 1: moh is faster); exits 1 when moh_bench_autoencoder fails.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from autoencoder_reference import PRESETS, AutoencoderKL, loss_terms  # noqa: E402


def torch_times(preset, batch, size, reps, warmup):
    torch.manual_seed(0)
    model = AutoencoderKL(**PRESETS[preset])
    x = torch.rand(batch, PRESETS[preset]["in_channels"], size, size) * 2 - 1
    enc, dec, bwd, step = [], [], [], []
    for r in range(warmup + reps):
        t0 = time.perf_counter()
        mean, logvar = model.encode(x)
        t1 = time.perf_counter()
        recon = model.decode(mean + torch.exp(0.5 * logvar) * torch.randn_like(mean))
        t2 = time.perf_counter()
        loss_terms(x, recon, mean, logvar)[0].backward()
        t3 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        if r >= warmup:
            enc.append((t1 - t0) * 1e3), dec.append((t2 - t1) * 1e3), bwd.append((t3 - t2) * 1e3)
            step.append((t3 - t0) * 1e3)
    return dict(encode_ms=statistics.median(enc), decode_ms=statistics.median(dec),
                backward_ms=statistics.median(bwd), step_ms=statistics.median(step),
                parameters=sum(p.numel() for p in model.parameters()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="fmnist", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    a = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    torch.set_num_threads(a.threads)
    bench = os.path.join(a.build_dir, "moh_bench_autoencoder")
    args = [bench, "--preset", a.preset, "--batch", str(a.batch), "--size", str(a.size), "--reps", str(a.reps),
            "--warmup", str(a.warmup), "--threads", str(a.threads), "--json"]
    best_moh, best_torch = None, None
    for _ in range(a.rounds):
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stderr)
            return 1
        m = json.loads(run.stdout.strip().splitlines()[-1])
        t = torch_times(a.preset, a.batch, a.size, a.reps, a.warmup)
        best_moh = m if best_moh is None or m["step_ms"] < best_moh["step_ms"] else best_moh
        best_torch = t if best_torch is None or t["step_ms"] < best_torch["step_ms"] else best_torch
    if best_moh["parameters"] != best_torch["parameters"]:
        sys.stderr.write(f"parameter counts differ: moh {best_moh['parameters']}, torch {best_torch['parameters']}\n")
        return 1
    print(f"autoencoder {a.preset} ({best_moh['parameters']} parameters), batch {a.batch} of {a.size} x {a.size}, "
          f"{a.threads} threads, best of {a.rounds} rounds of the median of {a.reps} steps; torch {torch.__version__}")
    print("| | encode ms | decode ms | backward ms | step ms | samples/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in (("moh", best_moh), ("PyTorch", best_torch)):
        print(f"| {name} | {r['encode_ms']:.1f} | {r['decode_ms']:.1f} | {r['backward_ms']:.1f} | {r['step_ms']:.1f} | "
              f"{1000 * a.batch / r['step_ms']:.1f} |")
    print(f"PyTorch / moh step time: {best_torch['step_ms'] / best_moh['step_ms']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
