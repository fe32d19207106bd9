#!/usr/bin/env bash
# The Fashion-MNIST latents the DiT configs train on (configs/dit/*.yaml read runs/ae_fmnist):
#   scripts/prepare_fmnist_latents.sh
# trains the autoencoder once (scripts/run.sh configs/autoencoder/fmnist.yaml, which also encodes the
# 60,000 training images to runs/ae_fmnist/latents_train.h5) and encodes the 10,000 test images to
# runs/ae_fmnist/latents_test.h5. Each step is skipped when its output exists, so the autoencoder is
# trained once for every DiT run. BUILD_DIR=build by default (its `moh` must be built).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: scripts/prepare_fmnist_latents.sh" >&2; exit 2; }
moh="${BUILD_DIR:-build}/moh"
[[ -x "$moh" ]] || { echo "prepare_fmnist_latents.sh: $moh is not built" >&2; exit 2; }
ae=runs/ae_fmnist
if [[ ! -f $ae/latents_train.h5 ]]; then
  if compgen -G "$ae/checkpoints/step_*.h5" >/dev/null; then
    echo "prepare_fmnist_latents.sh: encoding the training images with $ae" >&2
    "$moh" encode "$ae" --out "$ae/latents_train.h5" threads="$(nproc)" >&2
  else
    echo "prepare_fmnist_latents.sh: training the autoencoder once ($ae; about 5 minutes on 2 cores)" >&2
    BUILD_DIR=${BUILD_DIR:-build} scripts/run.sh configs/autoencoder/fmnist.yaml >&2
  fi
fi
if [[ ! -f $ae/latents_test.h5 ]]; then
  echo "prepare_fmnist_latents.sh: encoding the test images with $ae" >&2
  "$moh" encode "$ae" --split test --out "$ae/latents_test.h5" threads="$(nproc)" >&2
fi
