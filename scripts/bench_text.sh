#!/usr/bin/env bash
# Text pipeline speed on the KJV (scripts/prepare_kjv.sh): single-thread encode MB/s of moh vs npm
# tiktoken (node, WASM) on the same text for r50k_base, cl100k_base and o200k_base, a check that both give the same
# ids (count and FNV-1a digest of the whole sequence), and `moh tokenize` MB/s with 1 and 2 worker threads. Prints a Markdown table.
#   scripts/bench_text.sh [BUILD_DIR (default build)]
# Needs `scripts/setup.sh --reference` (node + tiktoken) and a build with moh and moh_bench_text.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
fixtures=$here/tests/reference/fixtures/text
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$here/scripts/prepare_kjv.sh" "$work/kjv" >/dev/null
cat "$work"/kjv/train/*.txt "$work"/kjv/val/*.txt >"$work/kjv.txt"
field() { sed -E "s/.*\"$1\": ?([0-9.]+).*/\1/" <<<"$2"; }

echo "| encoding | text | moh MB/s | tiktoken-node MB/s | moh / tiktoken | tokens/ids digest, moh = tiktoken |"
echo "| --- | --- | --- | --- | --- | --- |"
for enc in r50k_base cl100k_base o200k_base; do
  ranks=$fixtures/$enc.tiktoken.gz
  [[ $enc == o200k_base ]] && ranks=$here/tests/reference/node/$enc.tiktoken.gz  # made by make_text_fixtures.js
  [[ -f $ranks ]] || { echo "| $enc | (no $ranks: run tests/reference/make_text_fixtures.js) |"; continue; }
  ours=$("$build/moh_bench_text" --tokenizer "$ranks" --text "$work/kjv.txt" --repeats 5)
  theirs=$(node "$here/bench/text/tiktoken_speed.js" "$enc" "$work/kjv.txt" 5)
  a=$(field mb_per_s "$ours") b=$(field mb_per_s "$theirs")
  ta=$(field tokens "$ours")/$(field ids_fnv1a "$ours") tb=$(field tokens "$theirs")/$(field ids_fnv1a "$theirs")
  same=$([[ $ta == "$tb" ]] && echo "$ta (same)" || echo "$ta vs $tb (DIFFER)")
  echo "| $enc | KJV $(($(stat -c %s "$work/kjv.txt") / 1000)) kB | $a | $b | $(awk "BEGIN{printf \"%.1fx\", $a/$b}") | $same |"
done
echo
echo "| moh tokenize (cl100k_base, 66 books) | MB/s |"
echo "| --- | --- |"
for threads in 1 2; do
  out=$("$build/moh" tokenize --tokenizer "$fixtures/cl100k_base.tiktoken.gz" --out "$work/shards$threads" \
        --threads "$threads" "$work/kjv/train" "$work/kjv/val" 2>/dev/null)
  echo "| $threads thread(s) | $(field mb_per_s "$out" | xargs printf '%.1f') |"
done
