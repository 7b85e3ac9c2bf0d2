# The start every shell test that drives kbench shares, sourced with the
# binary as its argument: set -u, $kbench, a fresh working folder that is
# removed on exit, and a failure count.
set -u
kbench=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0
