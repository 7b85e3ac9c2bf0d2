# The start every shell test that drives kbench shares, sourced with the
# binary as its argument: set -u, $kbench, a fresh working folder that is
# removed on exit, a failure count, and the helpers below.
set -u
kbench=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect_rc CODE ARGS...: run kbench ARGS, its stdout in out and stderr in
# err, and fail unless it exits CODE.
expect_rc() {
    local code=$1
    shift
    "$kbench" "$@" >out 2>err
    local rc=$?
    [[ $rc -eq $code ]] || fail "kbench $* -> rc=$rc (want $code): $(cat out err)"
}

# expect_line CODE PATTERN ARGS...: kbench ARGS, its stdout in stdout and
# stderr in stderr; fail unless it exits CODE with one stderr line matching
# PATTERN and, when it refuses (2), printed nothing before.
expect_line() {
    local code=$1 pattern=$2
    shift 2
    "$kbench" "$@" >stdout 2>stderr
    local rc=$? lines
    lines=$(wc -l <stderr)
    if [[ $rc -ne $code || $lines -ne 1 ]] || ! grep -q -- "$pattern" stderr; then
        fail "kbench $* -> rc=$rc (want $code), stderr ($lines lines): $(cat stderr)"
    fi
    [[ $code -eq 2 && -s stdout ]] && fail "kbench $* printed before refusing: $(cat stdout)"
    return 0
}

# csv_column FILE NAME: the NAME column of a kbench CSV's rows, one a line
# (no cell before it may hold a comma).
csv_column() {
    awk -F, -v name="$2" '/^#/ { next } !col { for (i = 1; i <= NF; ++i) if ($i == name) col = i; next } { print $col }' "$1"
}
