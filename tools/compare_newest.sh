#!/usr/bin/env bash
# `ninja -C build compare`: compare the two newest CSVs under results/, then
# draw their overlay plots (plots/render.sh --overlay; skipped without
# gnuplot).  Exits with compare's exit code; a plot failure is only reported.
#   tools/compare_newest.sh KBENCH SOURCE_ROOT
set -uo pipefail
kbench=$1 src=$2
mapfile -t newest < <(find "$src/results" -name '*.csv' -printf '%T@ %p\n' | sort -rn | head -2 | cut -d' ' -f2-)
if [[ ${#newest[@]} -lt 2 ]]; then
    echo "kbench: compare needs two CSVs under $src/results; found ${#newest[@]}" >&2
    exit 2
fi
"$kbench" compare "${newest[1]}" "${newest[0]}"
rc=$?
# 2 is bad input, which the plots would only report again.
if [[ $rc -ne 2 ]]; then
    bash "$src/plots/render.sh" --optional --overlay "${newest[1]}" "${newest[0]}"
fi
exit $rc
