#!/usr/bin/env bash
# `ninja -C build bench`: measure the ceilings, run the default sweep of every
# op into results/, add the transformer's rows (one encoder layer, one
# decoder layer and the 6+6 seq2seq at B=32, T=128, d=512, h=8, ff=2048),
# then render the plots when gnuplot is present.
#   tools/ninja_bench.sh KBENCH SOURCE_ROOT
set -uo pipefail
kbench=$1 src=$2
mkdir -p "$src/results"
csv="$src/results/kbench-$(date +%Y%m%d-%H%M%S).csv"
"$kbench" run --ceilings --csv "$csv"
rc=$?
shape=(--batch 32 --src-len 128 --d-model 512 --heads 8 --d-ff 2048)
if [[ -f $csv ]]; then
    "$kbench" model encoder "${shape[@]}" --layers 1 --append "$csv" || rc=1
    "$kbench" model decoder "${shape[@]}" --tgt-len 128 --layers 1 --append "$csv" || rc=1
    "$kbench" model seq2seq "${shape[@]}" --tgt-len 128 --layers 6 --append "$csv" || rc=1
fi
# A failed row still leaves a complete CSV worth plotting; no GPU leaves none.
[[ -f $csv ]] && bash "$src/plots/render.sh" --optional "$csv"
exit $rc
