#!/usr/bin/env bash
# Reproduces the KJV character-LLM comparison of MHA and MoH with 75% and 50% of the heads
# (configs/llm/kjv_mha.yaml, kjv_moh.yaml, kjv_moh50.yaml): trains every config for every seed with the
# same budget (the configs' steps and batch, configs/llm/kjv_base.yaml, or --steps N), two runs at a time on one
# thread each, evaluates each final checkpoint on the whole validation split with the per-head usage
# (eval.head_usage), then writes docs/results/llm_kjv.md (validation loss, bits per byte, tokens/s,
# active heads: mean +- std over seeds) with llm_kjv_loss.png (loss curves) and llm_kjv_heads.png
# (per-block head selection rates). --torch also trains the PyTorch reference
# (tests/reference/train_llm_reference.py, MHA) for every seed with the same budget, as one more row.
# --steps N scales the warm-up to N steps (and validates 4 times, logs 40 times). Runs go to
# runs/reproduce_llm/<config>_s<seed> (runs/reproduce_llm_stepsN with --steps N); an interrupted script
# resumes them (train.resume=auto) and skips the evaluated ones: pass the same key=value overrides again.
# Usage: scripts/reproduce_llm.sh [--steps N] [--seeds "0 1"] [--configs "kjv_mha ..."] [--parallel 2]
#        [--torch] [--out docs/results/llm_kjv] [key=value ...]       (BUILD_DIR=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."

seeds="0 1"
configs="kjv_mha kjv_moh kjv_moh50"
parallel=2 steps="" torch=0 out=docs/results/llm_kjv
while [[ $# -gt 0 && "$1" == --* ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --torch) torch=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "reproduce_llm.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ -n $steps && ! $steps =~ ^[1-9][0-9]*$ ]]; then
  echo "reproduce_llm.sh: --steps must be a positive integer" >&2
  exit 2
fi
[[ $parallel =~ ^[1-9][0-9]*$ ]] || { echo "reproduce_llm.sh: --parallel must be a positive integer" >&2; exit 2; }
for config in $configs; do
  [[ -f configs/llm/$config.yaml ]] || { echo "reproduce_llm.sh: configs/llm/$config.yaml not found" >&2; exit 2; }
done

scripts/setup.sh --plot >&2
if ((torch)) && ! /usr/bin/python3 -c "import torch, yaml" 2>/dev/null; then
  echo "reproduce_llm.sh: --torch needs python3-torch and python3-yaml: scripts/setup.sh --reference" >&2
  exit 2
fi
build_dir=${BUILD_DIR:-build}
[[ -f "$build_dir/build.ninja" ]] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build_dir" --target moh -j "$(nproc)" >&2
BUILD_DIR=$build_dir scripts/prepare_kjv_tokens.sh >&2
runs=runs/reproduce_llm${steps:+_steps$steps}  # a shorter budget never passes for the configs' own
mkdir -p "$runs"

# The budget overrides every run gets: --steps N, with the warm-up scaled from the configs' recipe.
budget=()
if [[ -n $steps ]]; then
  resolved=$("$build_dir/moh" config "configs/llm/kjv_base.yaml" "$@")
  value() { awk -v s="$1:" -v k="$2:" '/^[a-z]/ { section = $1 } section == s && $1 == k { print $2 }' <<<"$resolved"; }
  base_steps=$(value train steps) base_warmup=$(value schedule warmup_steps)
  budget=(train.steps="$steps" schedule.warmup_steps=$((base_warmup * steps / base_steps))
          eval.every=$(((steps + 3) / 4)) checkpoint.every=$(((steps + 3) / 4)) train.log_every=$(((steps + 39) / 40)))
fi

train_one() {  # config seed overrides...
  local config=$1 seed=$2 name=${1}_s${2}
  shift 2
  echo "reproduce_llm.sh: training $name" >&2
  OMP_NUM_THREADS=1 "$build_dir/moh" train "configs/llm/$config.yaml" run.seed="$seed" run.name="$name" \
    run.dir="$runs" train.resume=auto threads=1 "${budget[@]}" "$@" >"$runs/$name.out" 2>&1
  OMP_NUM_THREADS=1 "$build_dir/moh" eval "$runs/$name" eval.head_usage="$runs/$name/head_usage.json" \
    >>"$runs/$name.out" 2>&1
  cp "$runs/$name/checkpoints/eval.json" "$runs/$name/eval.json"
}

torch_one() {  # seed overrides...: the PyTorch reference of kjv_mha, same budget
  local seed=$1 name=torch_mha_s$1
  shift
  echo "reproduce_llm.sh: training $name (PyTorch reference)" >&2
  mkdir -p "$runs/$name"
  # glibc keeps freed memory: PyTorch's per-op buffers are not re-faulted (scripts/bench_llm_vs_torch.py's
  # KEEP_FREED_MEMORY, the same values)
  OMP_NUM_THREADS=1 MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=1073741824 \
    /usr/bin/python3 tests/reference/train_llm_reference.py configs/llm/kjv_mha.yaml \
      run.seed="$seed" threads=1 "${budget[@]}" "$@" --moh "$build_dir/moh" --metrics "$runs/$name/metrics.jsonl" \
      >"$runs/$name.out" 2>&1
  tail -n 1 "$runs/$name.out" >"$runs/$name/result.json.tmp"  # the reference's last line is its JSON
  mv "$runs/$name/result.json.tmp" "$runs/$name/result.json"
}

# At most `parallel` runs at once: a new one starts as soon as any finishes.
wait_one() { wait -n || { echo "reproduce_llm.sh: a run failed (see $runs/*.out)" >&2; exit 1; }; }
running=0
start_job() {  # done-file command...
  if [[ -f $1 ]]; then
    echo "reproduce_llm.sh: $(dirname "$1") already done" >&2
    return
  fi
  shift
  if ((running >= parallel)); then
    wait_one
    running=$((running - 1))
  fi
  "$@" &
  running=$((running + 1))
}
for seed in $seeds; do
  for config in $configs; do start_job "$runs/${config}_s$seed/eval.json" train_one "$config" "$seed" "$@"; done
  ((torch)) && start_job "$runs/torch_mha_s$seed/result.json" torch_one "$seed" "$@"
done
for ((; running > 0; running--)); do wait_one; done

torch_flag=()
((torch)) && torch_flag=(--torch)
/usr/bin/python3 scripts/llm_results.py --runs "$runs" --configs "$configs" --seeds "$seeds" "${torch_flag[@]}" \
  --out "$out"
