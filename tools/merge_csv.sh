#!/usr/bin/env bash
# Merge kbench CSVs into one: the metadata of every file (a key's first
# value wins: the first part's ceilings, commit and date; later parts add
# their baseline_<op> keys), the header, then every file's rows in order.
# Each row keeps the pct_of_peak computed against its own part's ceilings.
#   bash tools/merge_csv.sh OUT.csv PART1.csv PART2.csv ...
# With --newest the parts are runs from oldest to newest: a row (op,
# variant, dtype, shape) appears once, as the newest run that has it
# measured it, in the place of its first appearance, and a metadata key
# keeps its newest value (for plots drawn from several runs).
#   bash tools/merge_csv.sh --newest OUT.csv OLD.csv ... NEW.csv
set -euo pipefail
newest=0
if [[ ${1:-} == --newest ]]; then
    newest=1
    shift
fi
out=$1
shift
# A part from an older kbench may lack columns added since (at the end of
# the header): its rows get those cells empty.  Headers that differ any
# other way are not the same table, and nothing is written.
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT
awk -v newest="$newest" '
     /^#/ { key = $0; sub(/:.*/, "", key); if (!(key in seen)) seen[key] = ++n; if (newest || meta[seen[key]] == "") meta[seen[key]] = $0; next }
     !body[FILENAME] {
         body[FILENAME] = 1; width[FILENAME] = split($0, h, ",")
         if (index(header ",", $0 ",") == 1) { file_header[FILENAME] = $0; next }
         if (index($0 ",", header ",") != 1 && header != "") {
             printf "merge_csv: %s: its header is not that of the other parts, nor an extension of it\n", FILENAME >"/dev/stderr"
             bad = 1; exit 2
         }
         header = $0; file_header[FILENAME] = $0; next
     }
     {
         split($0, f, ",")
         id = newest ? f[1] "," f[2] "," f[3] "," f[6] : ++m
         if (!(id in row)) order[++k] = id
         row[id] = $0; part[id] = FILENAME
     }
     END {
         if (bad) exit 2
         wide = split(header, h, ",")
         for (i = 1; i <= n; ++i) print meta[i]
         print header
         for (i = 1; i <= k; ++i) {
             line = row[order[i]]
             for (j = width[part[order[i]]]; j < wide; ++j) line = line ","
             print line
         }
     }' "$@" >"$tmp"
mv "$tmp" "$out"
