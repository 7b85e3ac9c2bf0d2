#!/usr/bin/env bash
# `ninja -C build compare`: compare the newest run under results/ with the
# run of the same GPU before it, both by the date in their metadata (never
# by file time), then draw their overlay plots (plots/render.sh --overlay;
# skipped without gnuplot).  Exits with compare's exit code; a plot failure
# is only reported.  A GPU with one run has nothing to compare: exit 0.
#   tools/compare_newest.sh KBENCH SOURCE_ROOT
set -uo pipefail
kbench=$1 src=$2
runs=$(bash "$src/tools/list_runs.sh" "$src/results" 2>/dev/null)
if [[ -z $runs ]]; then
    echo "kbench: compare needs two runs under $src/results; found none" >&2
    exit 2
fi
# BASE then NEW: the newest run, and the newest one before it of its GPU.
mapfile -t pair < <(awk -F'\t' '{ gpu[NR] = $2; path[NR] = $3 }
    END { for (i = NR - 1; i > 0; --i) if (gpu[i] == gpu[NR]) { print path[i]; break }
          print path[NR] }' <<<"$runs")
if [[ ${#pair[@]} -lt 2 ]]; then
    echo "kbench: ${pair[0]} is the only run of its GPU under $src/results; nothing to compare"
    exit 0
fi
"$kbench" compare "${pair[0]}" "${pair[1]}"
rc=$?
# 2 is bad input, which the plots would only report again.
if [[ $rc -ne 2 ]]; then
    bash "$src/plots/render.sh" --optional --overlay "${pair[0]}" "${pair[1]}"
fi
exit $rc
