#!/usr/bin/env bash
# `ninja plots` and `ninja compare` in a fresh clone, as their scripts run
# them (plots/render.sh, tools/compare_newest.sh) on the committed results.
# Plots: they exit cleanly and no committed file changes (the plots are
# drawn again as they were committed).  Compare: with one run per GPU there
# is nothing to compare (exit 0); after a new run that replaces the
# committed one, as tools/reference_run.sh does, compare takes the
# committed run (from HEAD) as the base and the new one as new, exits 0 or
# 1 (never 2), and only overlay plots appear.  A clone gives every file one
# time; here the runs get times in the reverse order of their dates, so
# that file times would pick the wrong runs.  Without gnuplot the plots are
# skipped.  Only committed work is cloned.  Exits 77 (skip) without git or
# a git source, or without committed runs.
#   tests/test_fresh_clone.sh KBENCH SOURCE_ROOT
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"
src=$(realpath "$2")

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

if ! command -v git >/dev/null || ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    echo "$src is not a git checkout; skipping the fresh-clone test"
    exit 77
fi
git clone -q "$src" clone || exit 1
cd clone || exit 1
meta() { # meta KEY FILE: the value of the file's `# KEY: ` line
    sed -n "s/^# $1: //p; /^[^#]/q" "$2"
}
mapfile -t runs < <(for f in $(find results -name '*.csv'); do echo "$(meta date "$f") $f"; done |
    sort | cut -d' ' -f2-)
if [[ ${#runs[@]} -lt 1 ]]; then
    echo "no committed runs; skipping the fresh-clone test"
    exit 77
fi
for i in "${!runs[@]}"; do
    touch -d "@$((1700000000 - i * 60))" "${runs[i]}"
done

if command -v gnuplot >/dev/null; then
    bash plots/render.sh >../plots.log 2>&1 || fail "plots exited $?: $(cat ../plots.log)"
else
    echo "gnuplot is not installed; the plots step is skipped"
fi
changed=$(git status --porcelain)
[[ -z $changed ]] || fail "the plots changed the clone: $changed"

# compare exits 0 or 1 (a verdict: a row may have got slower), never 2.
compare() { # compare: run it, check the exit code; its output in ../compare.log
    bash tools/compare_newest.sh "$kbench" "$PWD" >../compare.log 2>&1
    rc=$?
    [[ $rc -le 1 ]] || fail "compare exited $rc: $(cat ../compare.log)"
}
new=${runs[-1]}
base=
for f in "${runs[@]}"; do # the run before it in its folder: one kind of machine
    [[ $f == "$new" || $(dirname "$f") != "$(dirname "$new")" ]] || base=$f
done
compare
if [[ -n $base ]]; then
    grep -q "^base $PWD/$base: " ../compare.log && grep -q "^new  $PWD/$new: " ../compare.log ||
        fail "compare did not take $base then $new: $(head -3 ../compare.log)"
else
    grep -q "nothing to compare" ../compare.log || fail "one run, yet compare ran: $(head -3 ../compare.log)"
fi

# A new run of the newest run's GPU replaces its committed runs: a later
# date, and its first timed row 10% slower.
fresh=$(dirname "$new")/kbench-29990101-000000.csv
awk -F, -v OFS=, '/^# date: / { $0 = "# date: 2999-01-01T00:00:00Z" }
    /^#/ { print; next } !h++ { for (i = 1; i <= NF; i++) if ($i == "median_ms") m = i; print; next }
    !done && $m != "" { $m *= 1.1; done = 1 } { print }' "$new" >"$fresh"
for f in "${runs[@]}"; do
    [[ $(dirname "$f") == "$(dirname "$new")" ]] && rm "$f"
done
compare
grep -q "^base .*/$(basename "$new"): " ../compare.log && grep -q "^new  $PWD/$fresh: " ../compare.log ||
    fail "after a new run, compare did not take the committed $new then $fresh: $(head -3 ../compare.log)"
grep '^summary:' ../compare.log

# Only the new run, the removed ones and overlay plots may differ.
changed=$(git status --porcelain | grep -v "^?? plots/[^/]*/overlay-\|^?? $fresh\$\|^ D results/")
[[ -z $changed ]] || fail "the clone changed: $changed"

[[ $failures -eq 0 ]] && echo "fresh-clone plots and compare passed (compare exit $rc)"
exit $((failures > 0))
