#!/usr/bin/env bash
# The KJV token shards the LLM configs train on (configs/llm/*.yaml read corpora/kjv_char):
#   scripts/prepare_kjv_tokens.sh [OUT_DIR (default corpora/kjv_char)]
# makes the corpus (scripts/prepare_kjv.sh: 64 books for training, Jude and Revelation held out), a
# character-level tokenizer of its characters (OUT_DIR/tokenizer.json, `moh tokenizer train --kind char`)
# and the llm.c shards (OUT_DIR/train_000000.bin, val_000000.bin, meta.json, `moh tokenize`). Does nothing
# when OUT_DIR already holds meta.json. BUILD_DIR=build by default (its `moh` must be built).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
[[ $# -le 1 ]] || { echo "usage: scripts/prepare_kjv_tokens.sh [OUT_DIR]" >&2; exit 2; }
out=${1:-corpora/kjv_char}
moh="${BUILD_DIR:-build}/moh"
[[ -x "$moh" ]] || { echo "prepare_kjv_tokens.sh: $moh is not built" >&2; exit 2; }
if [[ -f "$out/meta.json" ]]; then
  echo "prepare_kjv_tokens.sh: $out already holds shards (meta.json); remove it to remake them" >&2
  exit 0
fi

text=$(mktemp -d)
trap 'rm -rf "$text"' EXIT
scripts/prepare_kjv.sh "$text" >&2
mkdir -p "$out"
"$moh" tokenizer train --kind char --out "$out/tokenizer.json" "$text/train" "$text/val" >&2
# The 66 books are the documents in canonical order; the last round(0.03 * 66) = 2 are validation.
"$moh" tokenize --tokenizer "$out/tokenizer.json" --out "$out" --val-fraction 0.03 --threads "$(nproc)" \
  "$text/train" "$text/val" >&2
echo "prepare_kjv_tokens.sh: shards and tokenizer in $out" >&2
