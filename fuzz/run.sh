#!/usr/bin/env bash
# Fuzz one target: run.sh TARGET MAKE_CORPUS SECONDS [libFuzzer flags...]
# Seeds come fresh from make_corpus; what the fuzzer learns is kept in
# <build>/fuzz/corpus/<target>/ for the next run, and a crashing input is
# saved as <build>/fuzz/crash-<target>-* and named on failure.
set -uo pipefail
target=$(realpath "$1") make_corpus=$(realpath "$2") seconds=$3
shift 3
name=$(basename "$target")
name=${name#fuzz_}
here=$(dirname "$target")
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
"$make_corpus" "$seeds" || exit 1
mkdir -p "$here/corpus/$name"
# -close_fd_mask=3 drops what the parsers print; libFuzzer and the
# sanitizers still report on their own descriptor.
# libFuzzer exits 77 on a crash by default, which meson counts as a skip:
# a crash must fail the test.  A leak is a failure too (-detect_leaks=1,
# libFuzzer's default, stated because ASAN_OPTIONS could override it).
"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
    -error_exitcode=1 -timeout_exitcode=1 -detect_leaks=1 \
    -print_final_stats=1 -artifact_prefix="$here/crash-$name-" "$@" \
    "$here/corpus/$name" "$seeds/$name" 2>"$here/$name.log"
rc=$?
grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)|cov: ' "$here/$name.log" | tail -4
if [[ $rc -ne 0 ]]; then
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$here/$name.log" | head -20
    echo "fuzz_$name failed: replay with $target <the crash file above>; full log $here/$name.log"
fi
exit "$rc"
