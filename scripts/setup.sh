#!/usr/bin/env bash
# Installs every Debian package that moh's build, tests and default run need. Idempotent: when all
# packages are present it only checks and returns. `--reference` also installs python3-torch and
# numpy, needed only to regenerate the golden fixtures in tests/reference/ (they are committed) and for
# scripts/bench_vs_torch.sh (python3-yaml too: tests/reference/train_llm_reference.py reads moh's resolved
# configs), plus node/npm and npm's `tiktoken` (pinned by tests/reference/node/
# package-lock.json, installed into tests/reference/node/node_modules) for the tokenizer fixtures
# (tests/reference/make_text_fixtures.js) and bench/text; `--plot` adds python3-matplotlib for scripts/reproduce_vit.sh.
# The CUDA toolkit is optional and not a Debian package here: /usr/local/cuda/bin/nvcc is used when present.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libopenblas-openmp-dev      # BLAS on the OpenMP runtime (linked statically: cmake/openblas_static.cmake)
  libdnnl-dev                 # oneDNN: float32 CPU convolutions (core/cpu/conv_onednn.cpp), on the OpenMP runtime
  nlohmann-json3-dev          # JSON (safetensors headers, metrics)
  libspdlog-dev               # run logs (train.log)
  libyaml-cpp-dev             # YAML run configs (trainers/config)
  libhdf5-dev zlib1g-dev      # HDF5 checkpoints and data shards; CRC32 checksums
  libgtest-dev libbenchmark-dev
  libjpeg62-turbo-dev libpng-dev  # JPEG/PNG decoding for ImageNet-style image folders (data/image_decode)
  openmpi-bin libopenmpi-dev  # MPI: multi-process data-parallel training (core/dist, scripts/launch.sh, mpirun tests)
  dataset-fashion-mnist       # Fashion-MNIST IDX files in /usr/share/datasets/fashion-mnist (ViT runs)
  libpcre2-dev                # tokenizer split patterns (data/text/split_pattern)
  libsentencepiece-dev sentencepiece  # SentencePiece .model files and training; spm_encode for its fixtures
  bible-kjv                   # the King James Bible, the default text corpus (scripts/prepare_kjv.sh)
  clang libclang-rt-14-dev libomp-14-dev  # the sanitizer + libFuzzer build (scripts/sanitized_build.sh, fuzz.sh)
)
case "${1:-}" in
  --reference)  # regenerate fixtures, bench_vs_torch.sh, bench_text.sh
    packages+=(python3-torch python3-numpy python3-yaml nodejs)
    command -v npm >/dev/null || packages+=(npm) ;;  # some nodejs builds (NodeSource) ship npm themselves
  --plot) packages+=(python3-matplotlib) ;;                # reproduce_vit.sh's accuracy plot
  "") ;;
  *) echo "setup.sh: unknown option '$1' (use --reference or --plot)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

if [[ ${1:-} == --reference ]]; then
  # The reference tokenizer, at the version the committed fixtures were made with.
  npm ci --no-audit --no-fund --prefix "$(dirname "$0")/../tests/reference/node"
fi
