#!/usr/bin/env bash
# LLM training speed on one GPU, for a GPU host with a bundle (scripts/bundle.sh of a CUDA build) and this
# source tree with its KJV shards (scripts/prepare_kjv_tokens.sh, made on the build machine and carried):
#   1. scripts/bench_llm_vs_torch.py --device cuda: moh MHA, moh MoH (sparse) and PyTorch MHA (the host's
#      python3 with torch) on the same fp32 model, data and AdamW, medians of the measured steps;
#   2. moh alone in bf16 mixed precision: MHA, MoH sparse (projections auto), MoH sparse with dense
#      projections (model.moh_projections=dense) and MoH dense (model.moh_execution=dense, every head
#      computed and gated): median step_ms of metrics.jsonl.
# The model is the KJV recipe widened to a GPT-2-small-like block stack (dim 768, depth 12, 12 heads of
# 64, SwiGLU 2048) so that the GPU has work; MoH keeps 3 shared heads + the top 6 of 9 (75%).
# Usage: scripts/bench_gpu_llm.sh BUNDLE_DIR [OUT_DIR (default $OUT or ./gpu_llm_logs)]
# Writes OUT_DIR/llm_bench.log; prints the two tables last.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
bundle=$(cd "${1:?usage: bench_gpu_llm.sh BUNDLE_DIR [OUT_DIR]}" && pwd -P) || exit 2
out=${2:-${OUT:-gpu_llm_logs}}
mkdir -p "$out" || exit 2
[[ -x $bundle/run.sh ]] || { echo "bench_gpu_llm.sh: $bundle is not a bundle" >&2; exit 2; }
[[ -f $root/corpora/kjv_char/meta.json ]] ||
  { echo "bench_gpu_llm.sh: $root/corpora/kjv_char has no shards: run scripts/prepare_kjv_tokens.sh" >&2; exit 2; }
log=$(cd "$out" && pwd -P)/llm_bench.log
cd "$root" || exit 2  # the configs' data.dir (corpora/kjv_char) is relative to it
# bench_llm_vs_torch.py runs <build-dir>/moh: a launcher that runs the bundle's.
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
printf '#!/bin/sh\nexec "%s/run.sh" moh "$@"\n' "$bundle" > "$shim/moh"
chmod +x "$shim/moh"
shape=(model.dim=768 model.depth=12 model.heads=12 model.mlp_hidden=2048)
moh_heads=(--shared 3 --topk 6)
status=0

echo "== moh vs PyTorch, fp32 on the GPU" | tee "$log"
timeout 300 python3 "$root/scripts/bench_llm_vs_torch.py" --device cuda --build-dir "$shim" --moh "${moh_heads[@]}" \
  --steps 20 --warmup 5 --batch 32 --threads 4 "${shape[@]}" >> "$log" 2>&1 || status=1

echo "== moh bf16 mixed precision" | tee -a "$log"
runs=$(mktemp -d)
common=(configs/llm/kjv_mha.yaml device=cuda precision=bf16 train.steps=25 train.batch_size=32 train.log_every=1
        eval.every=0 checkpoint.every=0 checkpoint.keep_last=1 data.eval_tokens=256 schedule.warmup_steps=0
        "run.dir=$runs" "${shape[@]}")
rows=()
moh=(model.attention=moh "model.shared_heads=[3]" "model.routed_topk=[6]")
for variant in mha moh moh_dense_proj moh_dense; do
  case $variant in
    mha) extra=(model.attention=mha) ;;
    moh) extra=("${moh[@]}") ;;                                      # sparse, projections auto
    moh_dense_proj) extra=("${moh[@]}" model.moh_projections=dense) ;;  # sparse core, one GEMM per projection
    moh_dense) extra=("${moh[@]}" model.moh_execution=dense) ;;        # every head computed and gated
  esac
  if timeout 120 "$shim/moh" train "${common[@]}" "run.name=$variant" "${extra[@]}" >> "$log" 2>&1; then
    rows+=("$(python3 - "$runs/$variant/metrics.jsonl" "$variant" <<'EOF'
import json, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1])]
ms = [r["step_ms"] for r in steps if "step_ms" in r and r["step"] > 5]
print(f"{'bf16 ' + sys.argv[2]:<20} {statistics.median(ms):9.1f} {32 * 256 * 1e3 / statistics.median(ms):10.0f} "
      f"{min(ms):8.1f}  ({len(ms)} steps after 5)")
EOF
)")
  else
    rows+=("moh bf16 $variant: FAILED (see llm_bench.log)")
    status=1
  fi
done
rm -rf "$runs"
{
  awk '/^LLM / { p = 1 } /^== moh bf16/ { p = 0 } p' "$log"
  printf '%-20s %9s %10s %8s\n' "moh run" ms/step tokens/s "best ms"
  printf '%s\n' "${rows[@]}"
} | tee -a "$log.summary"
cat "$log.summary" >> "$log" && rm -f "$log.summary"
exit $status
