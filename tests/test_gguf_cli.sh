#!/usr/bin/env bash
# `kbench model generate --gguf` and `kbench model tokenize`: bad input gets
# exit 2 and one line before any work; with SmolLM2's GGUF file in
# tools/smollm2.sh's cache, --prompt text generates through the C reference
# the tokens transformers gives (peers/smollm2_parity.py), decoded, and
# tokenize's ids and decoding agree with each other.
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"

expect() { expect_line "$1" "$2" model "${@:3}"; } # expect CODE PATTERN ARGS...

echo "not a gguf file at all" >bad.gguf
expect 2 "give the model as --weights DIR or --gguf FILE, not both" generate --cpu-only --gguf x.gguf --weights d
expect 2 "the GGUF file sets the model: drop --d-model" generate --cpu-only --gguf x.gguf --d-model 64
expect 2 "the GGUF file sets the model" generate --cpu-only --gguf x.gguf --tied
expect 2 "--prompt needs a tokenizer: give the model as --gguf FILE" generate --cpu-only --prompt hi
expect 2 "give the prompt as --prompt TEXT or as ids (--prompt-ids, --prompt-len), not both" generate --cpu-only --gguf x.gguf --prompt hi --prompt-ids 1
expect 2 "give the prompt as --prompt TEXT or as ids" generate --cpu-only --gguf x.gguf --prompt hi --prompt-len 3
expect 2 "--gguf needs a value" generate --cpu-only --gguf
expect 2 "missing.gguf: cannot open" generate --cpu-only --gguf missing.gguf
expect 2 "bad.gguf: not a GGUF file" generate --cpu-only --gguf bad.gguf
expect 2 "kbench model tokenize needs --gguf FILE" tokenize --text hi
expect 2 "give one of --text TEXT and --ids ID,ID,.." tokenize --gguf x.gguf
expect 2 "give one of --text TEXT and --ids" tokenize --gguf x.gguf --text a --ids 1
expect 2 "unknown option '--frob' for kbench model tokenize" tokenize --frob
expect 2 "--ids needs a value" tokenize --gguf x.gguf --ids ""
expect 2 "--gguf needs a value" tokenize --gguf "" --text hi
expect 2 "bad.gguf: not a GGUF file" tokenize --gguf bad.gguf --text hi
"$kbench" model tokenize --help | grep -q "usage: kbench model tokenize" || fail "tokenize --help"

gguf=${KBENCH_MODELS:-$HOME/.cache/kbench}/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
if [[ -r $gguf ]]; then
    expect 2 "--ids needs token ids from 0 to 49151" tokenize --gguf "$gguf" --ids 1,49152
    expect 2 "--ids needs token ids" tokenize --gguf "$gguf" --ids 1,,2
    expect 2 "--prompt-ids: id 49152 is outside the vocabulary of 49152" generate --cpu-only --gguf "$gguf" --prompt-ids 49152
    expect 2 "--prompt needs a value" generate --cpu-only --gguf "$gguf" --prompt ""
    expect 2 "--prompt gives 0 tokens" generate --cpu-only --gguf "$gguf" --prompt $'\x04' # a byte without a token
    expect 2 "need 8195 positions; the model has max_position_embeddings 8192" generate --cpu-only --gguf "$gguf" --prompt-len 4 --tokens 8192
    [[ $("$kbench" model tokenize --gguf "$gguf" --text "Hello world, it's 2024!") == 19556,905,28,357,506,216,34,32,34,36,17 ]] ||
        fail "tokenize --text: $("$kbench" model tokenize --gguf "$gguf" --text "Hello world, it's 2024!")"
    [[ $("$kbench" model tokenize --gguf "$gguf" --ids 1,19556,905,2) == "<|im_start|>Hello world<|im_end|>" ]] ||
        fail "tokenize --ids"
    # Bytes that are no printable UTF-8 come out escaped: 198 is "\n", 216 a space.
    [[ $("$kbench" model tokenize --gguf "$gguf" --ids 19556,198,216) == 'Hello\x0a ' ]] ||
        fail "tokenize --ids escapes: $("$kbench" model tokenize --gguf "$gguf" --ids 19556,198,216 | od -c)"
    # The chat prompt of peers/smollm2_parity.py, whose first four tokens transformers gives too.
    prompt=$'<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n'
    "$kbench" model generate --cpu-only --gguf "$gguf" --prompt "$prompt" --tokens 4 >stdout 2>stderr ||
        fail "generate --prompt: $(cat stderr)"
    grep -q '^prompt ids (tokenized): 1,4093,198,1780,314,260,3575,282,4649,47,2,198,1,520,9531,198$' stdout ||
        fail "generate --prompt: prompt ids $(grep '^prompt ids' stdout)"
    grep -q '^generated ids: 504,3575,282,4649$' stdout || fail "generate --prompt: $(grep '^generated ids' stdout)"
    grep -q '^generated text: The capital of France$' stdout || fail "generate --prompt: $(grep '^generated text' stdout)"
else
    echo "skipping the SmolLM2 runs: no $gguf (bash tools/smollm2.sh fetches it)"
fi
[[ $failures -eq 0 ]] && echo "all GGUF CLI checks passed"
exit $((failures > 0))
