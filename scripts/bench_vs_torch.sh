#!/usr/bin/env bash
# ViT training throughput, moh vs PyTorch: trains the same ViT preset (moh's `tiny` by default; the shape
# is read from moh_bench_vit_train --config-only, never written here) for the same steps, batch and
# thread count in both, and prints images/s, ms/step (medians after a warm-up) and the ratio moh/torch.
# --moh trains MoH attention (sparse, --shared heads + top --topk routed) on the moh side against
# PyTorch MHA as the reference. Exits non-zero when either side fails.
# Usage: scripts/bench_vs_torch.sh [--steps 30] [--warmup 5] [--batch 128] [--threads 2] [--preset tiny]
#                                  [--moh [--shared 2] [--topk 2]] [--build-dir build]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps=30 warmup=5 batch=128 threads=2 preset=tiny moh=0 shared=2 topk=2
build="${MOH_BUILD_DIR:-$root/build}"
usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
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
config="$("$bench" "${moh_args[@]}" --config-only)"
echo "== moh ($bench)"
moh_out="$("$bench" "${moh_args[@]}")" || { echo "$moh_out"; echo "bench_vs_torch.sh: moh run failed" >&2; exit 1; }
echo "$moh_out" | sed '$d'
echo "== torch (scripts/bench_vs_torch.py)"
torch_out="$(/usr/bin/python3 "$root/scripts/bench_vs_torch.py" --config "$config" --steps "$steps" \
             --warmup "$warmup" --threads "$threads")" \
  || { echo "$torch_out"; echo "bench_vs_torch.sh: torch run failed" >&2; exit 1; }
echo "$torch_out" | sed '$d'

/usr/bin/python3 - "$(echo "$moh_out" | tail -n 1)" "$(echo "$torch_out" | tail -n 1)" "$steps" "$warmup" <<'EOF'
import json, sys
m, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
c = m["config"]
moh_label = "MHA" if c["attention"] == "mha" else (
    f"MoH {c['attention'][4:]} {c['shared_heads']} shared + top-{c['routed_topk']} of "
    f"{c['heads'] - c['shared_heads']} routed")
print(f"\nViT {c['preset']} (img {c['img_size']}, patch {c['patch_size']}, dim {c['dim']}, depth {c['depth']}, "
      f"heads {c['heads']}, mlp {c['mlp_hidden']}), batch {c['batch']}, fp32 AdamW, {c['threads']} threads, "
      f"median of {sys.argv[3]} steps after {sys.argv[4]} warm-up; OpenBLAS kernels: moh {m['blas_core']}, "
      f"torch {t['blas_core']}")
print(f"{'framework':<10} {'attention':<40} {'ms/step':>9} {'images/s':>9} {'fwd ms':>8} {'bwd ms':>8} "
      f"{'opt ms':>7} {'best ms':>8} {'cpu ms':>8}")
for name, label, r in (("moh", moh_label, m), ("torch", "MHA (reference)", t)):
    print(f"{name:<10} {label:<40} {r['median_ms']:9.1f} {r['images_per_s']:9.1f} {r['forward_ms']:8.1f} "
          f"{r['backward_ms']:8.1f} {r['optimizer_ms']:7.1f} {r['min_ms']:8.1f} {r['cpu_ms']:8.1f}")
print(f"ratio moh/torch (images/s, medians): {m['images_per_s'] / t['images_per_s']:.3f}")
EOF
