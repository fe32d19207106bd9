#!/usr/bin/env bash
# Data-parallel step time on CPU: the same ViT run (fixed GLOBAL batch) on 1 process and on 2
# processes of `mpirun` (with whole and with ZeRO-1-sharded optimizer state), plus how much of the
# gradient all-reduce (reduce-scatter when sharded) was hidden behind backward.
# Usage: scripts/bench_ddp.sh [BUILD_DIR] [extra moh overrides]   (BUILD_DIR defaults to build)
# Prints a markdown table: processes x threads, median step ms after warm-up, samples/s, speed-up
# over one process, and the hidden fraction (1 - time the step waited / time collectives ran).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
export MOH_BIN="$PWD/$build/moh"
moh=$MOH_BIN
[[ -x $moh ]] || { echo "bench_ddp: no $moh (build first)" >&2; exit 1; }
out=$(mktemp -d /tmp/moh_bench_ddp.XXXXXX)
trap 'rm -rf "$out"' EXIT
cores=$(nproc)
args=(configs/vit/fmnist_mha.yaml run.dir="$out" train.steps=${STEPS:-24} train.batch_size=${BATCH:-64}
      train.log_every=1 eval.every=0 checkpoint.every=0 data.train_limit=4096 data.eval_limit=64
      model.drop_path=0 schedule.warmup_steps=2 distributed.bucket_mb=${BUCKET_MB:-1} "$@")

# Median step_ms over the steps after the first quarter, and the mean samples/s, from metrics.jsonl.
summarise() {
  python3 - "$1" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if '"loss"' in l]
rows = [r for r in rows if "step_ms" in r][len(rows) // 4:]
print(f'{statistics.median(r["step_ms"] for r in rows):.1f} {statistics.mean(r["samples_per_s"] for r in rows):.1f}')
PY
}

run() {  # NAME PROCS THREADS SHARDED
  local name=$1 np=$2 threads=$3 sharded=$4
  local run_args=("${args[@]}" run.name="$name" threads="$threads" distributed.shard_optimizer="$sharded")
  if [[ $np == 1 ]]; then
    OMP_NUM_THREADS=$threads "$moh" train "${run_args[@]}" >"$out/$name.txt" 2>&1
  else
    scripts/launch.sh -n "$np" -t "$threads" "${run_args[@]}" >"$out/$name.txt" 2>&1
  fi
}

echo "| processes x threads | optimizer state | step ms (median) | samples/s | speed-up vs 1 x 1 | gradient sync hidden |"
echo "| --- | --- | --- | --- | --- | --- |"
base=""
for spec in "1 1 false" "1 $cores false" "2 1 false" "2 1 true" "2 $((cores / 2 > 0 ? cores / 2 : 1)) false"; do
  read -r np threads sharded <<<"$spec"
  name="np${np}_t${threads}_${sharded}"
  [[ -e "$out/$name.txt" ]] && continue
  run "$name" "$np" "$threads" "$sharded"
  read -r ms rate < <(summarise "$out/$name")
  [[ -z $base ]] && base=$ms
  hidden=$(grep -o '([0-9]*% hidden)' "$out/$name/train.log" | tr -d '()' | sed 's/ hidden//' || true)
  speedup=$(python3 -c "print(f'{$base / $ms:.2f}x')")
  state=whole
  [[ $sharded == true && $np -gt 1 ]] && state="sharded (ZeRO-1)"
  echo "| $np x $threads | $state | $ms | $rate | $speedup | ${hidden:--} |"
done
