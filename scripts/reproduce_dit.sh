#!/usr/bin/env bash
# Reproduces the Fashion-MNIST DiT comparison of MHA and MoH with 90% and 75% of the heads: trains every
# config for every seed with the same budget (the configs' recipe: 3 epochs of the 60k latents, batch 128;
# pass overrides to change it), two runs at a time on one thread each (a 2-core machine), evaluates the
# held-out loss of each final EMA checkpoint, samples 1000 images (guidance 1.5, 25 DDIM steps) and scores
# them with moh fid against the 10k test images (floor, ceiling, sample accuracy), writes a 100-sample grid
# per config (guidance 4, 50 DDIM steps), then docs/results/dit_fmnist.md. The latents and the FID
# classifier are made first when missing (scripts/prepare_fmnist_latents.sh, fmnist_fid_classifier.yaml).
# Runs go to runs/reproduce_dit/<config>_s<seed>; an interrupted script resumes them.
# Usage: scripts/reproduce_dit.sh [--seeds "0 1"] [--configs "fmnist_mha ..."] [--parallel 2] [key=value ...]
#        (overrides apply to every run, e.g. train.epochs=1 for a quick look; BUILD_DIR=build)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/run_matrix.sh

seeds="0 1"
configs="fmnist_mha fmnist_moh90 fmnist_moh75"
parallel=2
parse_matrix_options reproduce_dit.sh 11 "$@"
set -- "${matrix_rest[@]}"

scripts/setup.sh >&2
build_dir=${BUILD_DIR:-build}
[[ -f "$build_dir/build.ninja" ]] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build_dir" --target moh -j "$(nproc)" >&2
BUILD_DIR=$build_dir scripts/prepare_fmnist_latents.sh
if ! compgen -G "runs/fid_classifier/checkpoints/step_*.h5" >/dev/null; then
  BUILD_DIR=$build_dir scripts/run.sh configs/vit/fmnist_fid_classifier.yaml >&2
fi
out_runs=runs/reproduce_dit
mkdir -p "$out_runs"

score_one() {  # name: eval.json (held-out loss, FID with floor and ceiling, sample accuracy) and a grid
  local run=$out_runs/$1
  OMP_NUM_THREADS=1 "$build_dir/moh" sample "$run" --out "$run/samples_grid" --num 100 --cfg 4 --steps 50 \
    --sampler ddim --crop 28 --seed 1 >/dev/null
  OMP_NUM_THREADS=1 "$build_dir/moh" eval "$run" eval.samples=1000 eval.sample_steps=25 \
    eval.fid_classifier=runs/fid_classifier | tail -n 1 >"$run/eval.json.tmp"
  mv "$run/eval.json.tmp" "$run/eval.json"  # last: its presence marks a finished run
}

train_one() {  # config seed overrides...
  local config=$1 seed=$2 name=${1}_s${2}
  shift 2
  echo "reproduce_dit.sh: training $name" >&2
  OMP_NUM_THREADS=1 "$build_dir/moh" train "configs/dit/$config.yaml" run.seed="$seed" run.name="$name" \
    run.dir="$out_runs" train.resume=auto threads=1 "$@" >"$out_runs/$name.out" 2>&1
  score_one "$name" >>"$out_runs/$name.out" 2>&1
}

run_matrix reproduce_dit.sh "$out_runs" "$parallel" "$seeds" "$configs" eval.json train_one "$@"

/usr/bin/python3 scripts/dit_results.py --runs "$out_runs" --configs "$configs" --seeds "$seeds" \
  --out docs/results/dit_fmnist
