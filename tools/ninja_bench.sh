#!/usr/bin/env bash
# `ninja -C build bench`: measure the ceilings, run the default sweep of every
# op into results/, then render the plots when gnuplot is present.
#   tools/ninja_bench.sh KBENCH SOURCE_ROOT
set -uo pipefail
kbench=$1 src=$2
mkdir -p "$src/results"
csv="$src/results/kbench-$(date +%Y%m%d-%H%M%S).csv"
"$kbench" run --ceilings --csv "$csv"
rc=$?
# A failed row still leaves a complete CSV worth plotting; no GPU leaves none.
[[ -f $csv ]] && bash "$src/plots/render.sh" --optional "$csv"
exit $rc
