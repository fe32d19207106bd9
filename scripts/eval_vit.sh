#!/usr/bin/env bash
# Evaluates a ViT run (its newest valid checkpoint) or one checkpoint file on the held-out split:
# prints "top-1 X% top-5 Y% loss Z" on stderr, then the eval JSON as the last line (also saved as
# eval.json beside the checkpoint). Extra key=value overrides go to `moh eval`, e.g.
# eval.predictions=preds.h5 (per-sample logits and labels) or data.root=/path/to/dataset.
# Usage: scripts/eval_vit.sh RUN_DIR|CHECKPOINT.h5 [key=value ...]   (BUILD_DIR=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -ge 1 ]] && exit 0 || exit 2
fi
build_dir=${BUILD_DIR:-build}
[[ -x "$build_dir/moh" ]] || { echo "eval_vit.sh: $build_dir/moh is not built (run scripts/run.sh or scripts/test.sh)" >&2; exit 2; }
result=$("$build_dir/moh" eval "$@" | tail -n 1)
top1=$(sed -n 's/.*"top1":\([0-9.e-]*\).*/\1/p' <<<"$result")
top5=$(sed -n 's/.*"top5":\([0-9.e-]*\).*/\1/p' <<<"$result")
loss=$(sed -n 's/.*"loss":\([0-9.e-]*\).*/\1/p' <<<"$result")
[[ -n "$top1" ]] || { echo "eval_vit.sh: no top1 in the result: $result" >&2; exit 1; }
awk -v a="$top1" -v b="$top5" -v l="$loss" 'BEGIN { printf "eval_vit.sh: test top-1 %.2f%%  top-5 %.2f%%  loss %.4f\n", 100*a, 100*b, l }' >&2
echo "$result"
