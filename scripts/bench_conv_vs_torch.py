#!/usr/bin/python3
"""conv2d and group_norm on the latent autoencoder's shapes, moh vs PyTorch (float32, CPU, same threads).

    /usr/bin/python3 scripts/bench_conv_vs_torch.py [--batch 32] [--reps 10] [--warmup 2] [--threads 2]
        [--rounds 2] [--build-dir build]

Runs build/moh_bench_conv --json (its shapes, read from its output, never written here), then times the
same layers in PyTorch the same way: the median over --reps of the forward and of forward + backward
(torch.autograd.grad of every input and parameter for a fixed random upstream gradient), after --warmup.
--rounds R alternates moh and PyTorch R times and keeps each side's best median (a shared machine's load
drifts). Both sides get OMP_NUM_THREADS = --threads. Prints a markdown table with the ratio PyTorch / moh
of the forward + backward time (> 1: moh is faster); exits 1 when moh_bench_conv fails.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


def torch_times(row, batch, reps, warmup):
    torch.manual_seed(0)
    x = torch.rand(batch, row["c"], row["h"], row["w"]) * 2 - 1
    if row["norm_groups"] > 0:
        params = [torch.rand(row["c"]) + 0.5, torch.rand(row["c"]) * 2 - 1]
        fn = lambda x, w, b: F.group_norm(x, row["norm_groups"], w, b, eps=1e-6)
    else:
        params = [(torch.rand(row["o"], row["c"], row["k"], row["k"]) * 2 - 1) * 0.1, (torch.rand(row["o"]) * 2 - 1) * 0.1]
        fn = lambda x, w, b: F.conv2d(x, w, b, stride=row["stride"], padding=row["pad"])
    leaves = [t.requires_grad_(True) for t in [x] + params]
    g = torch.rand_like(fn(*leaves)) * 2 - 1
    forward, train = [], []
    for r in range(warmup + reps):
        start = time.perf_counter()
        y = fn(*leaves)
        mid = time.perf_counter()
        torch.autograd.grad(y, leaves, g)
        end = time.perf_counter()
        if r >= warmup:
            forward.append((mid - start) * 1e3)
            train.append((end - start) * 1e3)
    return statistics.median(forward), statistics.median(train)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    a = ap.parse_args()
    bench = os.path.join(a.build_dir, "moh_bench_conv")
    if not os.access(bench, os.X_OK):
        sys.exit(f"bench_conv_vs_torch.py: {bench} not found; build it: ninja -C {a.build_dir} moh_bench_conv")
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    torch.set_num_threads(a.threads)
    medians = {}  # layer -> side -> [(forward, forward + backward) per round]
    for _ in range(a.rounds):
        run = subprocess.run([bench, "--json", "--batch", str(a.batch), "--reps", str(a.reps), "--warmup", str(a.warmup),
                              "--threads", str(a.threads)], capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stderr)
            sys.exit(1)
        for line in run.stdout.splitlines():
            row = json.loads(line)
            sides = medians.setdefault(row["layer"], {"moh": [], "torch": []})
            sides["moh"].append((row["forward_ms"], row["train_ms"]))
            sides["torch"].append(torch_times(row, a.batch, a.reps, a.warmup))
    best = {layer: {side: tuple(min(r[i] for r in rounds) for i in (0, 1)) for side, rounds in sides.items()}
            for layer, sides in medians.items()}
    print(f"float32, batch {a.batch}, {a.threads} threads, torch {torch.__version__}; best of {a.rounds} rounds of "
          f"the median of {a.reps}")
    print("| layer | moh fwd ms | torch fwd ms | moh fwd+bwd ms | torch fwd+bwd ms | torch / moh (fwd+bwd) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for layer, t in best.items():
        print(f"| {layer} | {t['moh'][0]:.2f} | {t['torch'][0]:.2f} | {t['moh'][1]:.2f} | {t['torch'][1]:.2f} | "
              f"{t['torch'][1] / t['moh'][1]:.2f}x |")


if __name__ == "__main__":
    main()
