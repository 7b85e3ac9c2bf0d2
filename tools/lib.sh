# Helpers the tools/ scripts share; source it: `source tools/lib.sh`.

# kb_gpu_slug NAME: the folder of a GPU's results and plots, its model
# ("NVIDIA H100 80GB HBM3" -> h100), or the whole name when the word after
# NVIDIA is a brand ("NVIDIA GeForce RTX 4090" -> geforce-rtx-4090).
kb_gpu_slug() {
    printf '%s' "${1:-unknown gpu}" | tr '[:upper:]' '[:lower:]' | sed 's/^nvidia //' |
        awk '$1 ~ /^(geforce|quadro|tesla|titan|rtx)$/ { print; next } { print $1 }' |
        sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//'
}

# kb_csv_gpu CSV: the `# gpu:` line of a kbench CSV's metadata.
kb_csv_gpu() {
    sed -n 's/^# gpu: //p;/^[^#]/q' "$1"
}

# kb_model_rows KBENCH CSV: the transformer's rows appended to a run (one
# encoder layer, one decoder layer and the 6+6 seq2seq at B=32, T=128,
# d=512, h=8, ff=2048).  Non-zero when any of them failed.
kb_model_rows() {
    local kbench=$1 csv=$2 rc=0
    local shape=(--batch 32 --src-len 128 --d-model 512 --heads 8 --d-ff 2048)
    "$kbench" model encoder "${shape[@]}" --layers 1 --append "$csv" || rc=1
    "$kbench" model decoder "${shape[@]}" --tgt-len 128 --layers 1 --append "$csv" || rc=1
    "$kbench" model seq2seq "${shape[@]}" --tgt-len 128 --layers 6 --append "$csv" || rc=1
    return $rc
}

# kb_llama_rows KBENCH CSV: the Llama-style model in bf16 on the GPU
# (`kbench model generate`), seeded, appended to a run: Llama-3.2-1B's
# shapes (d 2048, 16 layers, 32/8 heads, ff 8192, vocab 128256, tied),
# decoding 64 tokens after a 1024-token prompt and a 2048-token prefill;
# and SmolLM2-135M's (d 576, 30 layers, 9/3 heads, ff 1536, vocab 49152,
# tied), decoding after 1024.  Non-zero when any of them failed.
KB_LLAMA_1B=(--d-model 2048 --layers 16 --heads 32 --kv-heads 8 --d-ff 8192 --vocab 128256 --tied)
KB_SMOLLM2=(--d-model 576 --layers 30 --heads 9 --kv-heads 3 --d-ff 1536 --vocab 49152 --tied)
kb_llama_rows() {
    local kbench=$1 csv=$2 rc=0
    "$kbench" model generate "${KB_LLAMA_1B[@]}" --prompt-len 1024 --tokens 64 --append "$csv" || rc=1
    "$kbench" model generate "${KB_LLAMA_1B[@]}" --prompt-len 2048 --tokens 1 --append "$csv" || rc=1
    "$kbench" model generate "${KB_SMOLLM2[@]}" --prompt-len 1024 --tokens 64 --append "$csv" || rc=1
    return $rc
}

# kb_has_torch: PyTorch with a GPU, for the peer rows.
kb_has_torch() {
    python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null
}

# kb_step NAME COMMAND...: run a step, then say how long it took and how it
# ended, so a run's log shows where its time went.
kb_step() {
    local name=$1 start=$SECONDS rc
    shift
    "$@"
    rc=$?
    echo "== $name: exit $rc after $((SECONDS - start)) s"
    return $rc
}
