#!/usr/bin/env bash
# The King James Bible as a text corpus, from Debian's bible-kjv (scripts/setup.sh installs it):
#   scripts/prepare_kjv.sh OUT_DIR [VAL_BOOKS]
# writes one file per book, verses one per line with the "Ge1:1 " references stripped, numbered in
# canonical order: OUT_DIR/train/01_Ge.txt ... and the last VAL_BOOKS books (default 2: Jude and
# Revelation) in OUT_DIR/val/. `moh tokenize --out SHARDS OUT_DIR/train` then reads the books in order,
# one document each. Checks that all 31,102 verses of the 66 books came out.
set -euo pipefail

usage() { echo "usage: scripts/prepare_kjv.sh OUT_DIR [VAL_BOOKS (default 2)]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
out=$1
val_books=${2:-2}
[[ $val_books =~ ^[0-9]+$ && $val_books -lt 66 ]] || { echo "prepare_kjv: VAL_BOOKS must be 0..65, got '$val_books'" >&2; exit 2; }
command -v bible >/dev/null || { echo "prepare_kjv: 'bible' not found (install Debian's bible-kjv: scripts/setup.sh)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# -f: plain output, one "Book<chapter>:<verse> text" line per verse; -p: the data folder.
bible -f -p /usr/lib gen1:1-rev22:21 >"$tmp/all.txt"
verses=$(wc -l <"$tmp/all.txt")
[[ $verses -eq 31102 ]] || { echo "prepare_kjv: bible printed $verses verses, expected 31102" >&2; exit 1; }

mkdir -p "$tmp/train" "$tmp/val"
# The book is the reference minus its chapter:verse; a new book starts where it changes.
awk -v dir="$tmp" -v val_books="$val_books" '
  {
    ref = $1
    if (ref !~ /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+$/) { print "prepare_kjv: unexpected line " NR ": " $0 > "/dev/stderr"; exit 1 }
    book = ref; sub(/[0-9]+:[0-9]+$/, "", book)
    if (book != current) { current = book; n++; names[n] = book }
    text = substr($0, length(ref) + 2)
    lines[n] = lines[n] text "\n"
  }
  END {
    if (n != 66) { print "prepare_kjv: found " n " books, expected 66" > "/dev/stderr"; exit 1 }
    for (i = 1; i <= n; i++) {
      split_dir = (i > n - val_books) ? "val" : "train"
      file = sprintf("%s/%s/%02d_%s.txt", dir, split_dir, i, names[i])
      printf "%s", lines[i] > file
      close(file)
    }
  }' "$tmp/all.txt"

mkdir -p "$out"
rm -rf "$out/train" "$out/val"
mv "$tmp/train" "$tmp/val" "$out/"
echo "prepare_kjv: $verses verses, $((66 - val_books)) train books in $out/train, $val_books val books in $out/val"
