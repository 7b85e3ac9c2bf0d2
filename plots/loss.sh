#!/usr/bin/env bash
# Loss curves from `kbench model train --loss-csv` files, with gnuplot:
#   bash plots/loss.sh OUT_PREFIX LOSS.csv [LOSS.csv ...]
# writes OUT_PREFIX-step.{png,svg} (loss against step) and
# OUT_PREFIX-time.{png,svg} (against wall time), one line per file, labelled
# by the file's name without .csv; held-out losses as points.  Exit 2 on
# bad input, 3 without gnuplot, 1 when gnuplot fails.
set -uo pipefail
(($# >= 2)) || { echo "usage: bash plots/loss.sh OUT_PREFIX LOSS.csv [LOSS.csv ...]" >&2; exit 2; }
out=$1
shift
command -v gnuplot >/dev/null || { echo "kbench: no plots: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 3; }
titles=()
for f in "$@"; do
    [[ $f != *[[:space:]\']* ]] || { echo "kbench: $f: a path with spaces or quotes" >&2; exit 2; }
    head -n 20 "$f" 2>/dev/null | grep -q '^step,loss,grad_norm,lr,tokens,wall_s,val_loss$' ||
        { echo "kbench: $f is not a loss curve (kbench model train --loss-csv)" >&2; exit 2; }
    t=$(basename "$f" .csv)
    titles+=("${t//[[:space:]]/_}")
done
gp=$(dirname "$0")/loss.gp
for axis in step time; do
    [[ $axis == step ]] && col=1 label='step' || col=6 label='wall time (s)'
    tmp=$out-$axis.tmp.$$ # written whole, then renamed: no half-written plot
    if ! gnuplot -e "files='$*'; titles='${titles[*]}'; xcol=$col; xlabel='$label'; out='$tmp'" "$gp"; then
        rm -f "$tmp.png" "$tmp.svg"
        echo "kbench: gnuplot failed on $gp" >&2
        exit 1
    fi
    mv "$tmp.png" "$out-$axis.png" && mv "$tmp.svg" "$out-$axis.svg" || exit 1
done
echo "wrote $out-step.png, $out-time.png (and .svg)"
