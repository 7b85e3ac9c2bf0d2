#!/usr/bin/env python3
"""Parity of kbench with SmolLM2-135M-Instruct read from its GGUF file
(tools/smollm2.sh fetches it): the byte-level BPE tokenizer, the weights
and the C reference's logits and greedy tokens.

(a) Tokenizer.  The reference is the `tokenizers` package running SmolLM2's
    own pipeline (its tokenizer.json: pre-tokenizer Sequence[Digits(
    individual_digits), ByteLevel(add_prefix_space=False)], BPE with no
    unknown token, the CONTROL tokens added as special) on the GGUF's
    vocabulary and merges.  Each string of STRINGS goes through
    `kbench model tokenize --text`, and the decoded ids back through
    `--ids`.  transformers' own GGUF tokenizer (AutoTokenizer with
    gguf_file) is compared too, for information: it pre-tokenizes with
    plain ByteLevel, without the digit split that tokenizer.json has.
(b) Weights.  `kbench model generate --gguf --save DIR` writes what kbench
    loaded; every tensor must equal transformers' dequantized state dict
    (AutoModelForCausalLM with gguf_file, which also un-permutes Wq, Wk).
(c) Logits and tokens.  `kbench model generate --cpu-only --gguf FILE
    --prompt TEXT --tokens N --logits-out` against transformers' forward in
    float64 and float32, teacher-forced on kbench's tokens (rel. L2 <= --tol),
    and transformers' own greedy loop against kbench's N tokens.

--fixture-out FILE writes the reference ids of STRINGS for
tests/test_bpe_smollm2.c (each line: the string's UTF-8 in hex, a tab, the
ids comma-separated).

Needs gguf, tokenizers, numpy, torch and transformers; no hub.  Usage:

    python3 peers/smollm2_parity.py --kbench build/harness/kbench --gguf FILE [--tokens 32]

Exit status 0 when everything matches, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

STRINGS = [
    "Hello world",
    "Hello, world! How are you?",
    "It's a dog's life, isn't it? They're here, we've gone, I'm sure, you'll see, he'd know.",
    "don't won't can't shouldn't",
    "'s 't 're 've 'm 'll 'd",
    "IT'S LOUD'LL BE",
    "1234567890",
    "The year 2024 and 3.14159, 1,000,000 and 007.",
    "x 12 \u00b2\u00b3 \u00bd \u0663\u0664 \u2177",
    "Punctuation!!! ??? ... --- *** ### (a) [b] {c}",
    "a  b   c    d",
    "   leading spaces",
    "trailing spaces   ",
    "line one\nline two\n\nline four\n",
    "\ttab\tseparated\t\tvalues",
    "mixed \t\n whitespace \r\n windows",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 fa\u00e7ade \u00c5ngstr\u00f6m",
    "\u00dcn\u00efc\u00f6d\u00e9 \u00c0\u00c9\u00ce\u00d5\u00dc \u00ff\u00c0",
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u8fd9\u662f\u4e00\u4e2a\u6d4b\u8bd5\u3002",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u30ab\u30bf\u30ab\u30ca",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "emoji \U0001f642\U0001f389\U0001f44d\U0001f3fd family \U0001f468\u200d\U0001f469\u200d\U0001f467",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>text<|endoftext|><|im_end|>",
    "<|im_start|<|im_start|>< |im_end|>",
    "def f(x):\n    return x**2 + 1  # comment\n",
    "for (int i = 0; i < n; ++i) { a[i] = b[i] * 2; }",
    "https://example.com/path?query=1&b=2#frag",
    "email@example.com and @user #hashtag",
    "nbsp\u00a0here, ideographic\u3000space, en\u2002space, next\u0085line",
    "control \x04 byte, \x7f delete, \x1b[0m escape",
    "",
    "a",
    "a" * 300,
    "zero\u200bwidth and combining e\u0301",
    "Mixed123abc456def",
    "  \n  \n",
    " ' '' ''' 's",
]

PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")


def reference_tokenizer(path):
    """SmolLM2's tokenizer.json pipeline, built from the GGUF's vocabulary."""
    from gguf import GGUFReader
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    r = GGUFReader(path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    merges = [tuple(m.split(" ")) for m in r.fields["tokenizer.ggml.merges"].contents()]
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, unk_token=None, fuse_unk=False,
                     byte_fallback=False)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types) if k == 3])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t, k in zip(tokens, types) if k == 4])
    return tok


def kbench_ids(kbench, gguf, text):
    out = subprocess.run([kbench, "model", "tokenize", "--gguf", gguf, "--text", text], check=True,
                         capture_output=True).stdout.decode().strip()
    return [int(x) for x in out.split(",")] if out else []


def kbench_decode(kbench, gguf, ids):
    """The decoded bytes: --ids prints one line, every byte that is not
    printable UTF-8 (the backslash included) escaped as \\xNN."""
    out = subprocess.run([kbench, "model", "tokenize", "--gguf", gguf, "--ids", ",".join(map(str, ids))],
                         check=True, capture_output=True).stdout
    return re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), out.removesuffix(b"\n"))


def check_tokenizer(args, ref):
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(args.gguf)),
                                       gguf_file=os.path.basename(args.gguf))
    same = same_hf = round_trips = 0
    for s in STRINGS:
        want = ref.encode(s, add_special_tokens=False).ids
        got = kbench_ids(args.kbench, args.gguf, s)
        same += got == want
        same_hf += got == hf.encode(s, add_special_tokens=False)
        if got != want:
            print(f"  differs: {s!r}\n    tokenizers {want}\n    kbench     {got}")
        text = kbench_decode(args.kbench, args.gguf, got)
        round_trips += text == ref.decode(want, skip_special_tokens=False).encode()
    n = len(STRINGS)
    print(f"tokenizer: kbench equals tokenizers (SmolLM2's pipeline) on {same}/{n} strings; "
          f"decodes {round_trips}/{n} back as tokenizers does; "
          f"equals transformers' GGUF tokenizer (no digit split) on {same_hf}/{n}")
    return same == n and round_trips == n


def write_fixture(path, ref):
    with open(path, "w") as f:
        for s in STRINGS:
            ids = ref.encode(s, add_special_tokens=False).ids
            f.write(s.encode().hex() + "\t" + ",".join(map(str, ids)) + "\n")
    print(f"wrote {path} ({len(STRINGS)} strings)")


def load_hf_model(gguf):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(os.path.abspath(gguf)),
                                                 gguf_file=os.path.basename(gguf), dtype=torch.float32)
    return model.eval()


def check_weights(args, model, work):
    from safetensors.numpy import load_file

    save = os.path.join(work, "saved")
    subprocess.run([args.kbench, "model", "generate", "--cpu-only", "--gguf", args.gguf, "--prompt-ids", "1",
                    "--tokens", "1", "--save", save], check=True, capture_output=True)
    mine = load_file(os.path.join(save, "model.safetensors"))
    theirs = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        theirs.pop("lm_head.weight", None)
    worst, bad = 0.0, []
    for name, w in theirs.items():
        if name not in mine or mine[name].shape != w.shape:
            bad.append(name)
            continue
        worst = max(worst, float(np.max(np.abs(mine[name] - w))))
    bad += [k for k in mine if k not in theirs]
    print(f"weights: {len(mine)} tensors from kbench, {len(theirs)} from transformers; largest difference "
          f"{worst:.3g}; mismatched names or shapes: {bad or 'none'}")
    return not bad and worst == 0.0


def run_kbench(args, work):
    logits = os.path.join(work, "logits.npy")
    out = subprocess.run([args.kbench, "model", "generate", "--cpu-only", "--gguf", args.gguf, "--prompt", PROMPT,
                          "--tokens", str(args.tokens), "--logits-out", logits], check=True, capture_output=True)
    text = out.stdout.decode(errors="replace")
    lines = {ln.split(":")[0]: ln for ln in text.splitlines()}
    prompt = [int(x) for x in lines["prompt ids (tokenized)"].split(":", 1)[1].split(",")]
    tokens = [int(x) for x in lines["generated ids"].split(":", 1)[1].split(",")]
    print(text.strip())
    return prompt, tokens, np.load(logits)


def check_model(args, model, ref, work):
    import torch

    prompt, tokens, logits = run_kbench(args, work)
    ok = prompt == ref.encode(PROMPT, add_special_tokens=False).ids
    print(f"prompt: kbench's {len(prompt)} ids {'equal' if ok else 'DIFFER from'} tokenizers'")
    seq = torch.tensor([prompt + tokens[:-1]])
    T = len(prompt)
    for dtype in (torch.float64, torch.float32):
        m = model.to(dtype)
        with torch.no_grad():
            full = m(seq).logits[0, T - 1:].double().numpy()
        err = np.linalg.norm(logits.astype(np.float64) - full) / np.linalg.norm(full)
        print(f"logits vs transformers {str(dtype)[6:]}: rel. L2 {err:.3e} over {len(tokens)} steps (tol {args.tol:g})")
        ok &= bool(err <= args.tol)
    m = model.to(torch.float64)
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(args.tokens):
            ids.append(int(torch.argmax(m(torch.tensor([ids])).logits[0, -1])))
    greedy = ids[T:]
    agree = next((k for k in range(len(tokens)) if tokens[k] != greedy[k]), len(tokens))
    print(f"greedy: transformers (float64) and kbench agree on {agree}/{len(tokens)} tokens")
    print("transformers' text:", repr(ref.decode(greedy, skip_special_tokens=False)))
    return ok and agree == len(tokens)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kbench", required=True)
    p.add_argument("--gguf", required=True)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--work")
    p.add_argument("--fixture-out")
    p.add_argument("--tokenizer-only", action="store_true")
    args = p.parse_args()
    ref = reference_tokenizer(args.gguf)
    if args.fixture_out:
        write_fixture(args.fixture_out, ref)
    ok = check_tokenizer(args, ref)
    if not args.tokenizer_only:
        with tempfile.TemporaryDirectory(dir=args.work) as work:
            model = load_hf_model(args.gguf)
            ok &= check_weights(args, model, work)
            ok &= check_model(args, model, ref, work)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
