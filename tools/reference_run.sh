#!/usr/bin/env bash
# The reference run of this machine's GPU in one command: the default sweep
# of every op with measured ceilings and energy windows (--energy), the
# transformer's rows, the Llama-style model's (kb_llama_rows), the model's
# four stages (`kbench model stages`), and PyTorch's rows where PyTorch sees a GPU, into one
# CSV, results/<gpu>/kbench-<date>.csv (<gpu>-x<N> on a machine of N GPUs,
# whose sweep is dealt over all of them and adds the collectives across
# them and the tensor-parallel FFN at 8192 tokens, d 8192, ff 32768),
# which replaces that GPU's earlier runs (git keeps them); then its plots in
# plots/<gpu>/ and, with --readme, the README's results and stage tables from it.
#   bash tools/reference_run.sh [--readme] [KBENCH]   (default: build/'s, built first)
# `ninja -C build bench` runs it.
# Each step says how long it took.  Exit 1 when a step failed; the CSV is
# kept all the same, since a failed row never counts in its speed figures.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/lib.sh
readme=0
[[ ${1:-} == --readme ]] && { readme=1; shift; }
kbench=${1:-}
if [[ -z $kbench ]]; then
    ninja -C build >/dev/null || { echo "reference_run: building build/ failed" >&2; exit 1; }
    kbench=build/harness/kbench
fi
kbench=$(realpath "$kbench")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
csv=$work/run.csv
rc=0

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
devices=()
((gpus > 1)) && devices=(--devices all)
kb_step sweep "$kbench" run --ceilings --energy "${devices[@]}" --csv "$csv" || rc=1
[[ -f $csv ]] || exit 1
if ((gpus > 1)); then
    kb_step "tensor-parallel FFN" "$kbench" run --devices all --op ffn --dtype bf16 --sizes 8192x8192x32768 \
        --csv "$work/tp.csv" || rc=1
    bash tools/merge_csv.sh "$work/merged.csv" "$csv" "$work/tp.csv" && mv "$work/merged.csv" "$csv" || rc=1
fi
kb_step model kb_model_rows "$kbench" "$csv" || rc=1
kb_step "Llama model" kb_llama_rows "$kbench" "$csv" || rc=1
kb_step "model stages" "$kbench" model stages --append "$csv" || rc=1
if kb_has_torch; then
    kb_step "PyTorch ops" python3 peers/torch_peers.py "$csv" --max-time 0.3 || rc=1
    if ((gpus > 1)); then
        kb_step "PyTorch collectives" python3 peers/torch_collectives.py "$csv" --max-time 0.3 || rc=1
    fi
    PYTHONUNBUFFERED=1 kb_step "PyTorch model" python3 peers/torch_transformer.py --kbench "$kbench" \
        --work "$work" --csv "$csv" || rc=1
    PYTHONUNBUFFERED=1 kb_step "PyTorch Llama" python3 peers/torch_llama.py --context 1024 --tokens 64 \
        --prefill-len 2048 --csv "$csv" || rc=1
else
    echo "== PyTorch rows: skipped (no PyTorch that sees a GPU)"
fi
# The peers write raw timings and the model's rows lack roofline figures:
# kbench derives them all, as the sweep does its own rows.
kb_step derive "$kbench" derive "$csv" || rc=1

slug=$(kb_gpu_slug "$(kb_csv_gpu "$csv")")
((gpus > 1)) && slug=$slug-x$gpus
dest=results/$slug/kbench-$(date -u +%Y%m%d-%H%M%S).csv
mkdir -p "results/$slug" && mv "$csv" "$dest" || exit 1
find "results/$slug" -name '*.csv' ! -path "$dest" -delete
echo "== wrote $dest"
kb_step plots bash plots/render.sh --optional "$dest" || rc=1
if ((readme)); then
    kb_step "README table" "$kbench" report "$dest" --readme README.md || rc=1
    ((gpus > 1)) || kb_step "README stage table" "$kbench" report "$dest" --stages --readme README.md || rc=1
fi
exit $rc
