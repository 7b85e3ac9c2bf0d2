#!/usr/bin/env bash
# The kbench runs (CSVs) under DIR, oldest first by the `# date:` line of
# each one's metadata, never by file time: a clone gives every file the same
# one.  One line a run: DATE<TAB>GPU<TAB>PATH; a run without a date sorts
# first.  Used by plots/render.sh and tools/compare_newest.sh.
#   bash tools/list_runs.sh DIR
set -euo pipefail
find "$1" -type f -name '*.csv' -exec awk -v OFS='\t' '
    FNR == 1 { date = gpu = "" }
    /^# date: / { date = substr($0, 9) }
    /^# gpu: / { gpu = substr($0, 8) }
    !/^#/ { print date, gpu, FILENAME; nextfile }' {} + | sort
