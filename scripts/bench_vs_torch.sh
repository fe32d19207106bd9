#!/usr/bin/env bash
# ViT training throughput, moh vs PyTorch: trains the same ViT preset (moh's `tiny` by default; the shape
# is read from moh_bench_vit_train --config-only, never written here) for the same steps, batch and
# thread count in both, and prints images/s, ms/step (medians after a warm-up) and the ratio moh/torch.
# --moh trains MoH attention (sparse, --shared heads + top --topk routed) on the moh side against
# PyTorch MHA as the reference. --rounds R alternates the two R times and pools the steps, which evens
# out a machine whose load drifts. Both run with the same OMP_WAIT_POLICY: --wait-policy (active,
# passive, or unset for the runtime's spin-then-sleep default), else the environment's, else passive
# (on a machine shared with other jobs, spinning idle OpenMP threads make step times bimodal and
# several times slower for both). Exits non-zero when either side fails.
# Usage: scripts/bench_vs_torch.sh [--steps 30] [--warmup 5] [--batch 128] [--threads 2] [--preset tiny]
#                                  [--moh [--shared 2] [--topk 4]] [--rounds 1] [--wait-policy passive]
#                                  [--build-dir build]
# --llm (anywhere in the arguments) times an LLM config's training instead, moh (MHA, and MoH with
# --moh) against tests/reference/train_llm_reference.py: scripts/bench_llm_vs_torch.py, whose --help
# lists its options (--config configs/llm/kjv_mha.yaml, --steps, --batch, --threads, --rounds, ...).
# --dit (anywhere in the arguments) times the DiT fmnist training step instead, moh (MHA, and MoH with
# --moh) against tests/reference/dit_reference.py: scripts/bench_dit_vs_torch.py, whose --help lists its
# options (--batch 128, --steps, --threads, --heads 8, --shared 4, --topk 2, --rounds 3, ...).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for arg in "$@"; do
  if [[ $arg == --llm || $arg == --dit ]]; then
    rest=()
    for a in "$@"; do [[ $a == "$arg" ]] || rest+=("$a"); done
    exec /usr/bin/python3 "$root/scripts/bench_${arg#--}_vs_torch.py" "${rest[@]}"
  fi
done
steps=30 warmup=5 batch=128 threads=2 preset=tiny moh=0 shared=2 topk=4 rounds=1
wait_policy="${OMP_WAIT_POLICY:-passive}"
build="${MOH_BUILD_DIR:-$root/build}"
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --preset) preset="$2"; shift 2 ;;
    --moh) moh=1; shift ;;
    --shared) shared="$2"; shift 2 ;;
    --topk) topk="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --wait-policy) wait_policy="$2"; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_vs_torch.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

bench="$build/moh_bench_vit_train"
if [[ ! -x "$bench" ]]; then
  echo "bench_vs_torch.sh: $bench not found; build it: ninja -C $build moh_bench_vit_train" >&2
  exit 2
fi
moh_args=(--preset "$preset" --steps "$steps" --warmup "$warmup" --batch "$batch" --threads "$threads")
if [[ $moh == 1 ]]; then moh_args+=(--moh --shared "$shared" --topk "$topk"); fi

export OMP_NUM_THREADS="$threads"
if [[ $wait_policy == unset ]]; then unset OMP_WAIT_POLICY; else export OMP_WAIT_POLICY="$wait_policy"; fi
config="$("$bench" "${moh_args[@]}" --config-only)"
moh_json=() torch_json=()
for ((round = 1; round <= rounds; ++round)); do
  echo "== moh ($bench), round $round of $rounds"
  out="$("$bench" "${moh_args[@]}")" || { echo "$out"; echo "bench_vs_torch.sh: moh run failed" >&2; exit 1; }
  echo "$out" | sed '$d'
  moh_json+=("$(echo "$out" | tail -n 1)")
  echo "== torch (scripts/bench_vs_torch.py), round $round of $rounds"
  out="$(/usr/bin/python3 "$root/scripts/bench_vs_torch.py" --config "$config" --steps "$steps" \
         --warmup "$warmup" --threads "$threads")" \
    || { echo "$out"; echo "bench_vs_torch.sh: torch run failed" >&2; exit 1; }
  echo "$out" | sed '$d'
  torch_json+=("$(echo "$out" | tail -n 1)")
done

# The table: medians over every measured step of every round (ms/step, images/s, best step), medians of
# the rounds' medians for the parts of a step.
/usr/bin/python3 - "$steps" "$warmup" "$rounds" "${moh_json[@]}" "${torch_json[@]}" <<'EOF'
import json, os, statistics, sys
steps, warmup, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [json.loads(a) for a in sys.argv[4:]]
moh, torch = runs[:rounds], runs[rounds:]
c = moh[0]["config"]

def summary(rs):
    step_ms = [t for r in rs for t in r["step_ms"]]
    med = statistics.median(step_ms)
    parts = {k: statistics.median(r[k] for r in rs) for k in ("forward_ms", "backward_ms", "optimizer_ms", "cpu_ms")}
    return dict(parts, median_ms=med, images_per_s=c["batch"] * 1e3 / med, min_ms=min(step_ms))

m, t = summary(moh), summary(torch)
shared, topk = c["shared_heads"], c["routed_topk"]
if isinstance(shared, list) or isinstance(topk, list):  # per-block lists
    moh_label = f"MoH {c['attention'][4:]} shared {shared} top-k {topk}"
else:
    moh_label = f"MoH {c['attention'][4:]} {shared} shared + top-{topk} of {c['heads'] - shared} routed"
if c["attention"] == "mha":
    moh_label = "MHA"
print(f"\nViT {c['preset']} (img {c['img_size']}, patch {c['patch_size']}, dim {c['dim']}, depth {c['depth']}, "
      f"heads {c['heads']}, mlp {c['mlp_hidden']}, {'class token' if c['class_token'] else 'mean pooling'}), "
      f"batch {c['batch']}, fp32 AdamW, {c['threads']} threads (OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}); "
      f"{rounds} x {steps} steps after {warmup} warm-up each; OpenBLAS kernels: moh {moh[0]['blas_core']}, "
      f"torch {torch[0]['blas_core']}")
print(f"{'framework':<10} {'attention':<40} {'ms/step':>9} {'images/s':>9} {'fwd ms':>8} {'bwd ms':>8} "
      f"{'opt ms':>7} {'best ms':>8} {'cpu ms':>8}")
for name, label, r in (("moh", moh_label, m), ("torch", "MHA (reference)", t)):
    print(f"{name:<10} {label:<40} {r['median_ms']:9.1f} {r['images_per_s']:9.1f} {r['forward_ms']:8.1f} "
          f"{r['backward_ms']:8.1f} {r['optimizer_ms']:7.1f} {r['min_ms']:8.1f} {r['cpu_ms']:8.1f}")
print(f"ratio moh/torch (images/s, medians): {m['images_per_s'] / t['images_per_s']:.3f}")
EOF
