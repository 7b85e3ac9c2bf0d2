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
