#!/usr/bin/env bash
# Merge kbench CSVs of one session into one: the first file's metadata and
# header, then every file's rows, in order.
#   bash tools/merge_csv.sh OUT.csv PART1.csv PART2.csv ...
set -euo pipefail
out=$1
shift
awk 'FNR == 1 { body = 0 } /^#/ { if (NR == FNR) print; next }
     !body { body = 1; if (NR == FNR) print; next } { print }' "$@" >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
