#!/usr/bin/env bash
# `ninja -C build compare`: compare the two newest CSVs under results/.
#   tools/compare_newest.sh KBENCH SOURCE_ROOT
set -uo pipefail
kbench=$1 src=$2
mapfile -t newest < <(find "$src/results" -name '*.csv' -printf '%T@ %p\n' | sort -rn | head -2 | cut -d' ' -f2-)
if [[ ${#newest[@]} -lt 2 ]]; then
    echo "kbench: compare needs two CSVs under $src/results; found ${#newest[@]}" >&2
    exit 2
fi
exec "$kbench" compare "${newest[1]}" "${newest[0]}"
