#!/usr/bin/env bash
# Merge kbench CSVs of one session into one: the metadata of every file (a
# key's first value wins: the first part's ceilings, commit and date; later
# parts add their baseline_<op> keys), the header, then every file's rows in
# order.  Each row keeps the pct_of_peak computed against its own part's
# ceilings.
#   bash tools/merge_csv.sh OUT.csv PART1.csv PART2.csv ...
set -euo pipefail
out=$1
shift
awk '/^#/ { key = $0; sub(/:.*/, "", key); if (!(key in seen)) { seen[key] = 1; meta[++n] = $0 }; next }
     !body[FILENAME] { body[FILENAME] = 1; if (!header) header = $0; next }
     { rows[++m] = $0 }
     END { for (i = 1; i <= n; ++i) print meta[i]; print header; for (i = 1; i <= m; ++i) print rows[i] }' \
    "$@" >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
