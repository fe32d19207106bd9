#!/usr/bin/env bash
# The README's main command: install what is missing, build if needed, train a config on the CPU
# (default configs/vit/fmnist_moh.yaml: MoH with 75% of the heads on Fashion-MNIST), evaluate the final
# checkpoint and print the test accuracy (ViT) or the validation bits per byte and a sample (LLM: the
# KJV shards are made first when missing, scripts/prepare_kjv_tokens.sh), the held-out loss and a sample
# grid (DiT: the Fashion-MNIST latents are made first when missing, scripts/prepare_fmnist_latents.sh).
# The last line printed is the eval JSON (autoencoder and DiT: the training summary, whose eval/ keys
# are the final evaluation).
# Training is data-parallel (scripts/launch.sh) over one single-threaded process per core, up to 4:
# the small ViT's ops gain little from a second OpenMP thread while processes scale, and the global
# batch (so the result) is the same for any count. PROCS=N overrides; PROCS=1 runs without mpirun.
# Usage: scripts/run.sh [CONFIG.yaml] [key=value ...]      (BUILD_DIR=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
config=configs/vit/fmnist_moh.yaml
if [[ $# -gt 0 && "$1" != *=* ]]; then
  config=$1
  shift
fi
[[ -f "$config" ]] || { echo "run.sh: config '$config' not found" >&2; exit 2; }

scripts/setup.sh >&2
build_dir=${BUILD_DIR:-build}
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
cmake --build "$build_dir" --target moh -j "$(nproc)" >&2

resolved=$("$build_dir/moh" config "$config" "$@")
task=$(sed -n 's/^task: //p' <<<"$resolved")
if [[ $task == llm ]]; then
  data_dir=$(awk '/^[a-z]/ { section = $1 } section == "data:" && $1 == "dir:" { print $2 }' <<<"$resolved")
  if [[ ! -f "$data_dir/meta.json" ]]; then
    [[ $data_dir == corpora/kjv_char ]] || { echo "run.sh: data.dir '$data_dir' holds no token shards (make them with moh tokenize, docs/text.md)" >&2; exit 2; }
    BUILD_DIR=$build_dir scripts/prepare_kjv_tokens.sh "$data_dir"
  fi
fi

if [[ $task == dit ]]; then
  latents=$(awk '/^[a-z]/ { section = $1 } section == "data:" && $1 == "latents:" { print $2 }' <<<"$resolved")
  if [[ $latents == runs/ae_fmnist/* ]]; then
    BUILD_DIR=$build_dir scripts/prepare_fmnist_latents.sh
  elif [[ ! -e "$latents" ]]; then
    echo "run.sh: data.latents '$latents' does not exist (make it with moh encode, docs/latents.md)" >&2
    exit 2
  fi
  if [[ $latents == runs/ae_fmnist/* ]] && ! compgen -G "runs/fid_classifier/checkpoints/step_*.h5" >/dev/null; then
    echo "run.sh: training the FID feature classifier once (configs/vit/fmnist_fid_classifier.yaml)" >&2
    BUILD_DIR=$build_dir scripts/run.sh configs/vit/fmnist_fid_classifier.yaml >&2
  fi
fi

procs=${PROCS:-}
if [[ -z $procs ]]; then
  procs=1
  for n in 4 2; do
    if (($(nproc) >= n)); then procs=$n; break; fi
  done
  command -v mpirun >/dev/null || procs=1
fi

# The training's final evaluation is the one reported (the autoencoder's PSNR, the DiT's held-out loss
# and, once the FID classifier exists, its FID of 1000 samples): it runs on every rank, not repeated after.
final_eval=()
if [[ $task == dit && -d runs/fid_classifier ]]; then
  final_eval=(eval.samples=1000 eval.sample_steps=25 eval.fid_classifier=runs/fid_classifier)
fi
set -- "$@" "${final_eval[@]}"

start=$(date +%s)
if ((procs > 1)); then
  echo "run.sh: training on $procs processes of 1 thread (PROCS=1: one process)" >&2
  summary=$(MOH_BIN="$(realpath "$build_dir/moh")" scripts/launch.sh -n "$procs" -t 1 "$config" "$@" | tail -n 1)
else
  summary=$("$build_dir/moh" train "$config" "$@" | tail -n 1)
fi
run_dir=$(sed -n 's/.*"run_dir":"\([^"]*\)".*/\1/p' <<<"$summary")
[[ -n "$run_dir" ]] || { echo "run.sh: training did not report its run folder: $summary" >&2; exit 1; }
trained=$(($(date +%s) - start))
echo "run.sh: trained and evaluated in ${trained}s: $run_dir" >&2
# The autoencoder's and DiT's steps after training run in one process: give it every core (the latents
# moh encode writes are the same bytes at 1 and 2 threads).
all_cores=threads=$(nproc)
if [[ $task == llm ]]; then
  result=$("$build_dir/moh" eval "$run_dir" | tail -n 1)
  bpb=$(sed -n 's/.*"bits_per_byte":\([0-9.e-]*\).*/\1/p' <<<"$result")
  loss=$(sed -n 's/.*"loss":\([0-9.e-]*\).*/\1/p' <<<"$result")
  [[ -n "$bpb" ]] || { echo "run.sh: no bits_per_byte in the result: $result" >&2; exit 1; }
  echo "run.sh: val bits per byte $bpb (loss $loss)" >&2
  echo "run.sh: a sample (moh generate $run_dir --prompt 'And God said' --max-tokens 300 --seed 1):" >&2
  "$build_dir/moh" generate "$run_dir" --prompt "And God said" --max-tokens 300 --seed 1 >&2
  echo >&2
  echo "$result"
elif [[ $task == autoencoder ]]; then
  psnr=$(sed -n 's/.*"eval\/psnr":\([0-9.e-]*\).*/\1/p' <<<"$summary")
  [[ -n "$psnr" ]] || { echo "run.sh: no eval/psnr in the training summary: $summary" >&2; exit 1; }
  echo "run.sh: test PSNR $psnr dB; originals above reconstructions: $run_dir/reconstructions.png" >&2
  echo "run.sh: encoding the training images to $run_dir/latents_train.h5 (the DiT family's input)" >&2
  "$build_dir/moh" encode "$run_dir" --out "$run_dir/latents_train.h5" "$all_cores" >&2
  echo "$summary"
elif [[ $task == dit ]]; then
  mse=$(sed -n 's/.*"eval\/mse":\([0-9.e-]*\).*/\1/p' <<<"$summary")
  [[ -n "$mse" ]] || { echo "run.sh: no eval/mse in the training summary: $summary" >&2; exit 1; }
  fid=$(sed -n 's/.*"eval\/fid":\([0-9.e-]*\).*/\1/p' <<<"$summary")
  echo "run.sh: held-out noise-prediction MSE $mse (EMA weights)${fid:+; FID of 1000 samples $fid}" >&2
  "$build_dir/moh" sample "$run_dir" --out "$run_dir/samples" --num 100 --cfg 4 --steps 50 --sampler ddim \
    --crop 28 --seed 1 "$all_cores" >&2
  echo "run.sh: 100 samples, guidance 4, one class per column: $run_dir/samples/grid.png" >&2
  echo "$summary"
else
  exec scripts/eval_vit.sh "$run_dir"
fi
