#!/usr/bin/env bash
# `ninja plots` and `ninja compare` in a fresh clone, as their scripts run
# them (plots/render.sh, tools/compare_newest.sh) on the committed results:
# both exit cleanly, compare takes the newest run and the one before it by
# the dates in their metadata, and no committed file changes (the plots are
# drawn again as they were committed).  A clone gives every file one time;
# here the runs get times in the reverse order of their dates, so that file
# times would pick the wrong runs.  Without gnuplot the plots are skipped.
# Only committed work is cloned.  Exits 77 (skip) without git or a git
# source, or without committed runs.
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
if [[ ${#runs[@]} -lt 2 ]]; then
    echo "fewer than two committed runs; skipping the fresh-clone test"
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

# compare exits 0 or 1 (a verdict: a row may have got slower), never 2.
new=${runs[-1]} base=
for f in "${runs[@]}"; do
    [[ $f == "$new" || $(meta gpu "$f") != "$(meta gpu "$new")" ]] || base=$f
done
bash tools/compare_newest.sh "$kbench" "$PWD" >../compare.log 2>&1
rc=$?
[[ $rc -le 1 ]] || fail "compare exited $rc: $(cat ../compare.log)"
grep -q "^base $PWD/$base: " ../compare.log && grep -q "^new  $PWD/$new: " ../compare.log ||
    fail "compare did not take $base then $new: $(head -3 ../compare.log)"
grep '^summary:' ../compare.log

# Only new overlay plots may appear; nothing committed changes.
changed=$(git status --porcelain | grep -v '^?? plots/[^/]*/overlay-')
[[ -z $changed ]] || fail "the clone changed: $changed"

[[ $failures -eq 0 ]] && echo "fresh-clone plots and compare passed (compare exit $rc)"
exit $((failures > 0))
