#!/usr/bin/env bash
# Reproduces the Fashion-MNIST comparison of MHA and MoH at 90/75/50% active heads: trains every
# config for every seed with the same budget (9 epochs, batch 64: the configs' recipe; pass overrides to
# change it), two runs at a time on one thread each (a 2-core machine), evaluates each final
# checkpoint on the 10k test images, then writes docs/results/vit_fmnist.md (mean +- std test accuracy,
# active-head share, training throughput, attention time share) and vit_fmnist.png (accuracy curves).
# Runs go to runs/reproduce/<config>_s<seed>; an interrupted script resumes them.
# Usage: scripts/reproduce_vit.sh [--seeds "0 1"] [--configs "fmnist_mha ..."] [--parallel 2] [key=value ...]
#        (overrides apply to every run, e.g. train.epochs=1 for a quick look; BUILD_DIR=build)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/run_matrix.sh

seeds="0 1"
configs="fmnist_mha fmnist_moh90 fmnist_moh fmnist_moh50"
parallel=2
parse_matrix_options reproduce_vit.sh 9 "$@"
set -- "${matrix_rest[@]}"

scripts/setup.sh --plot >&2
build_dir=${BUILD_DIR:-build}
[[ -f "$build_dir/build.ninja" ]] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build_dir" --target moh moh_bench_vit_train -j "$(nproc)" >&2
out_runs=runs/reproduce
mkdir -p "$out_runs"

train_one() {  # config seed overrides...
  local config=$1 seed=$2 name=${1}_s${2}
  shift 2
  echo "reproduce_vit.sh: training $name" >&2
  OMP_NUM_THREADS=1 "$build_dir/moh" train "configs/vit/$config.yaml" run.seed="$seed" run.name="$name" \
    run.dir="$out_runs" train.resume=auto eval.every=1876 threads=1 "$@" >"$out_runs/$name.out" 2>&1
  OMP_NUM_THREADS=1 "$build_dir/moh" eval "$out_runs/$name" >>"$out_runs/$name.out" 2>&1
  cp "$out_runs/$name/checkpoints/eval.json" "$out_runs/$name/eval.json"
}

run_matrix reproduce_vit.sh "$out_runs" "$parallel" "$seeds" "$configs" eval.json train_one "$@"

# Attention's share of a training step per config: moh_bench_vit_train on the same shapes and batch.
shares=()
for config in $configs; do
  resolved=$("$build_dir/moh" config "configs/vit/$config.yaml" "$@")
  value() { sed -n "s/^  $1: \(.*\)$/\1/p" <<<"$resolved" | head -n 1 | tr -d '[] '; }  # first section's key
  moh_args=()
  [[ $(value attention) == moh ]] && moh_args=(--moh --shared "$(value shared_heads)" --topk "$(value routed_topk)")
  share=$(OMP_NUM_THREADS=1 "$build_dir/moh_bench_vit_train" --batch "$(value batch_size)" --steps 20 --warmup 3 \
    "${moh_args[@]}" --attention-share | tail -n 1 | sed -n 's/.*"attention_share":\([0-9.e-]*\).*/\1/p')
  shares+=("$config=$share")
done
/usr/bin/python3 scripts/vit_results.py --runs "$out_runs" --configs "$configs" --seeds "$seeds" \
  --attention-share "${shares[@]}" --out docs/results/vit_fmnist
