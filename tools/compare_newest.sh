#!/usr/bin/env bash
# `ninja -C build compare`: compare the newest run under results/ with the
# run of the same GPU before it, both by the date in their metadata (never
# by file time), then draw their overlay plots (plots/render.sh --overlay;
# skipped without gnuplot).  A reference run replaces its GPU's earlier runs
# in the tree, so when the tree holds no earlier run of that GPU, the one
# before it is the committed one (git's HEAD) that the new run replaced.
# A GPU with one run in all has nothing to compare: exit 0.  Otherwise the
# exit code is compare's; a plot failure is only reported.
#   tools/compare_newest.sh KBENCH SOURCE_ROOT
set -uo pipefail
kbench=$1 src=$2
runs=$(bash "$src/tools/list_runs.sh" "$src/results" 2>/dev/null)
if [[ -z $runs ]]; then
    echo "kbench: compare needs two runs under $src/results; found none" >&2
    exit 2
fi
# BASE then NEW: the newest run, and the newest one before it of its kind
# of machine: in its folder, results/<gpu>/ (one H200 and two H200s share
# a gpu name), or, with `gpu`, of its gpu name.
pick_pair() {
    awk -F'\t' -v by="${1:-folder}" '{ path[NR] = $3; key[NR] = $2 }
        by == "folder" { key[NR] = $3; sub(/\/[^\/]*$/, "", key[NR]) }
        END { for (i = NR - 1; i > 0; --i) if (key[i] == key[NR]) { print path[i]; break }
              print path[NR] }'
}
mapfile -t pair < <(pick_pair <<<"$runs")
new=${pair[-1]}

# The committed runs of NEW's GPU, in its folder at HEAD, that are not NEW
# as it stands, extracted into $head under their own names (for compare to
# show them); then NEW's line last, for pick_pair.
head=$(mktemp -d)
trap 'rm -rf "$head"' EXIT
committed_base() {
    local top rel f
    top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) || return 0
    git -C "$src" rev-parse --verify -q HEAD >/dev/null || return 0
    rel=$(realpath --relative-to="$top" "$(dirname "$new")")
    while IFS= read -r f; do
        [[ $f == *.csv ]] || continue
        git -C "$top" show "HEAD:$f" >"$head/${f##*/}" || return 0
        cmp -s "$head/${f##*/}" "$top/$f" && rm "$head/${f##*/}"
    done < <(git -C "$top" ls-tree -r --name-only HEAD -- "$rel/")
    { bash "$src/tools/list_runs.sh" "$head"; awk -F'\t' -v p="$new" '$3 == p' <<<"$runs"; } | pick_pair gpu
}
if [[ ${#pair[@]} -lt 2 ]]; then
    mapfile -t pair < <(committed_base)
fi
if [[ ${#pair[@]} -lt 2 ]]; then
    echo "kbench: $new is the only run of its GPU under $src/results and at HEAD; nothing to compare"
    exit 0
fi
"$kbench" compare "${pair[0]}" "${pair[1]}"
rc=$?
# 2 is bad input, which the plots would only report again.
if [[ $rc -ne 2 ]]; then
    bash "$src/plots/render.sh" --optional --overlay "${pair[0]}" "${pair[1]}"
fi
exit $rc
