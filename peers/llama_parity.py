#!/usr/bin/env python3
"""Parity of `kbench model generate` (the Llama-style C reference) with
Hugging Face transformers' LlamaForCausalLM.

For each case it builds a random LlamaForCausalLM offline from a LlamaConfig
(grouped-query attention, untied and tied embeddings, an explicit head_dim),
re-initializes its weights so that logits are well spread (matrices
N(0, 1/fan_in), the embedding N(0, 1), every RMSNorm weight perturbed to
1 + N(0, 0.1^2) so a forward that drops one is caught), saves it with
save_pretrained(safe_serialization=True), and runs

    kbench model generate --cpu-only --weights DIR --prompt-ids ... \
        --tokens N --logits-out LOGITS.npy

It then checks, against transformers' forward in float64 (and in float32):

  * the greedy tokens: transformers' own greedy loop (full recompute at each
    step) must produce kbench's N tokens;
  * the logits: kbench writes the last position's logits of every step,
    (N, vocab); transformers, run once over prompt + kbench's tokens[:-1]
    (teacher forcing, so one near-tie cannot derail the rest), gives the
    same rows at positions T-1 .. T+N-2.  Relative L2 error <= --tol (1e-4).

A bf16 case saves the weights in bfloat16; its reference is transformers'
forward of the same bf16-rounded weights widened to float32/float64, since
kbench converts bf16 to fp32 on load.

With --gpu it checks the GPU path instead (`kbench model generate` without
--cpu-only: bf16 weights, activations and KV cache, fp32 accumulation) on
cases whose shapes it runs (head_dim a multiple of 16): the reference is
transformers' forward of the weights rounded to bf16 (as kbench rounds them),
and the logits' bound is the one kbench's own check prints (harness/
tolerance.c's bf16 model bound), so it is written in one place.  bf16 may
break a near-tie the other way and part from transformers' free-running
greedy sequence: there each of kbench's picks, teacher-forced, must be
transformers' or within twice that step's largest logit error of it.

Needs torch, transformers and numpy (present on the GPU machines); no hub
access.  Usage:

    python3 peers/llama_parity.py --kbench build/harness/kbench [--work DIR] [--tokens 32] [--gpu]

Exit status 0 when every case passes, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

CASES = [
    # name, config overrides, storage dtype
    dict(name="gqa-untied", hidden_size=64, intermediate_size=176, num_hidden_layers=3, num_attention_heads=8,
         num_key_value_heads=2, vocab_size=503, tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-5,
         dtype="float32"),
    dict(name="mha-tied", hidden_size=48, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=4, vocab_size=257, tie_word_embeddings=True, rope_theta=500.0, rms_norm_eps=1e-6,
         dtype="float32"),
    dict(name="mqa-head-dim", hidden_size=96, intermediate_size=200, num_hidden_layers=2, num_attention_heads=6,
         num_key_value_heads=1, head_dim=32, vocab_size=311, tie_word_embeddings=False, rope_theta=100000.0,
         rms_norm_eps=1e-5, dtype="float32"),
    dict(name="gqa-untied-bf16", hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=8,
         num_key_value_heads=4, vocab_size=401, tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-5,
         dtype="bfloat16"),
    # Llama 3.1's frequency scaling at an original context of 64, so that at
    # head_dim 16 one pair keeps its frequency, two blend and five are divided.
    dict(name="llama3-scaling", hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=2, vocab_size=409, tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-5,
         rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                           original_max_position_embeddings=64), dtype="float32"),
]

# Shapes the GPU path runs (head_dim a multiple of 16 up to 128, d_model and
# d_ff multiples of 8), with --gpu.
GPU_CASES = [
    dict(name="gpu-gqa-untied", hidden_size=256, intermediate_size=704, num_hidden_layers=3, num_attention_heads=8,
         num_key_value_heads=2, vocab_size=1003, tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-5,
         dtype="float32"),
    dict(name="gpu-mha-tied-bf16", hidden_size=128, intermediate_size=352, num_hidden_layers=2,
         num_attention_heads=2, num_key_value_heads=2, vocab_size=517, tie_word_embeddings=True,
         rope_theta=500000.0, rms_norm_eps=1e-6, dtype="bfloat16"),
    CASES[2],  # mqa-head-dim: head_dim 32
    dict(CASES[4], name="gpu-llama3-scaling", hidden_size=128, intermediate_size=352),  # head_dim 32
]


def inv_freq(theta, hd, scaling):
    """RoPE's frequencies in float64, with rope_type "llama3"'s scaling
    (reference/llama.h states the rule)."""
    f = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    if not scaling:
        return f
    s, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    n = scaling["original_max_position_embeddings"]
    wavelen = 2 * torch.pi / f
    a = ((n / wavelen - lo) / (hi - lo)).clamp(0, 1)
    return torch.where(wavelen < n / hi, f, torch.where(wavelen > n / lo, f / s, (1 - a) * f / s + a * f))


def build(case, seed):
    """A random LlamaForCausalLM of the case's config, re-initialized."""
    kw = {k: v for k, v in case.items() if k not in ("name", "dtype", "rope_scaling")}
    scaling = case.get("rope_scaling")
    cfg = LlamaConfig(max_position_embeddings=512, hidden_act="silu", attention_bias=False, mlp_bias=False,
                      rope_scaling=dict(scaling) if scaling else None, bos_token_id=None, eos_token_id=None,
                      pad_token_id=None, attention_dropout=0.0, **kw)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    q = model.model.layers[0].self_attn.q_proj.weight
    if "head_dim" in kw and q.shape[0] != kw["num_attention_heads"] * kw["head_dim"]:
        return None, "this transformers' LlamaForCausalLM ignores head_dim"
    # The model must use the theta asked for (transformers 5 moved it into
    # rope_parameters): compare its inverse frequencies with theta's.
    rotary = getattr(model.model, "rotary_emb", None)
    if rotary is not None and hasattr(rotary, "inv_freq"):
        hd = q.shape[0] // kw["num_attention_heads"]
        want = inv_freq(kw["rope_theta"], hd, scaling)
        if not torch.allclose(rotary.inv_freq.to(torch.float64), want, rtol=1e-6):
            raise RuntimeError(f"{case['name']}: the model's RoPE frequencies are not rope_theta "
                               f"{kw['rope_theta']}'s (rope_scaling {scaling}): is this transformers' rope "
                               f"configured otherwise?")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif "embed_tokens" in name:
                p.copy_(torch.randn_like(p))
            elif p.dim() == 2:
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
            else:
                raise RuntimeError(f"unexpected parameter {name} {tuple(p.shape)}: a bias?")
    if cfg.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "lm_head not tied"
    return model, None


@torch.no_grad()
def rounded(model, dtype):
    """The model's weights rounded to dtype and widened back to fp32.  .to()
    also rounds the RoPE frequency buffers, which no checkpoint holds
    (transformers recomputes them in fp32 on load): keep those."""
    buffers = {name: b.clone() for name, b in model.named_buffers()}
    m = model.to(dtype).to(torch.float32)
    for name, b in m.named_buffers():
        b.copy_(buffers[name])
    return m


def save(model, path, dtype):
    buffers = {name: b.clone() for name, b in model.named_buffers()}
    m = model.to(getattr(torch, dtype))
    try:
        m.save_pretrained(path, safe_serialization=True)
    except TypeError:  # transformers without the argument: safetensors is its only format
        m.save_pretrained(path)
    if not os.path.exists(os.path.join(path, "model.safetensors")):
        raise RuntimeError(f"save_pretrained wrote no model.safetensors in {path}: {os.listdir(path)}")
    # The reference runs the weights as kbench holds them: rounded to the
    # storage dtype, widened to fp32, with the fp32 buffers of before.
    m = m.to(torch.float32)
    with torch.no_grad():
        for name, b in m.named_buffers():
            b.copy_(buffers[name])
    return m


@torch.no_grad()
def logits_at(model, ids, dtype):
    """Logits of every position of ids (1-D list) in the given float dtype."""
    m = model.to(dtype)
    out = m(torch.tensor([ids]), use_cache=False).logits[0].to(torch.float64).numpy()
    model.to(torch.float32)
    return out


@torch.no_grad()
def greedy(model, prompt, n, dtype):
    m = model.to(dtype)
    ids, out = list(prompt), []
    for _ in range(n):
        logits = m(torch.tensor([ids]), use_cache=False).logits[0, -1]
        nxt = int(torch.argmax(logits))
        out.append(nxt)
        ids.append(nxt)
    model.to(torch.float32)
    return out


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def run_kbench(kbench, weights, prompt, n, npy, gpu):
    cmd = [kbench, "model", "generate", "--no-ceilings" if gpu else "--cpu-only", "--weights", weights,
           "--prompt-ids", ",".join(map(str, prompt)), "--tokens", str(n), "--logits-out", npy]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    line = [l for l in r.stdout.splitlines() if l.startswith("generated ids:")]
    if len(line) != 1:
        raise RuntimeError(f"no 'generated ids:' line in kbench's output:\n{r.stdout}")
    tokens = [int(t) for t in line[0].split(":", 1)[1].strip().split(",")]
    timing = [l for l in r.stdout.splitlines() if l.startswith("CPU reference" if not gpu else "decode:")]
    tol = re.search(r"\(tolerance ([0-9.e+-]+)\)", r.stdout)
    if gpu and not tol:
        raise RuntimeError(f"no '(tolerance ...)' in kbench's check line:\n{r.stdout}")
    return tokens, np.load(npy).astype(np.float64), timing[0] if timing else "", float(tol.group(1)) if gpu else None


def check_case(case, args, work):
    model, why = build(case, args.seed)
    if model is None:
        print(f"{case['name']:18s} SKIP: {why}")
        return True
    path = os.path.join(work, case["name"])
    model = save(model, path, case["dtype"])
    if args.gpu:  # kbench's GPU path rounds every weight to bf16
        model = rounded(model, torch.bfloat16)
    rng = np.random.default_rng(args.seed + 1)
    prompt = [int(t) for t in rng.integers(0, case["vocab_size"], size=args.prompt_len)]
    n = args.tokens

    kb_tokens, kb_logits, timing, gpu_tol = run_kbench(args.kbench, path, prompt, n,
                                                       os.path.join(work, case["name"] + ".npy"), args.gpu)
    tol = gpu_tol if args.gpu else args.tol
    ok = True
    problems = []
    if kb_logits.shape != (n, case["vocab_size"]):
        problems.append(f"kbench's logits have shape {kb_logits.shape}, expected {(n, case['vocab_size'])}")
        ok = False
    if len(kb_tokens) != n:
        problems.append(f"kbench generated {len(kb_tokens)} tokens, expected {n}")
        ok = False
    errors = {}
    if ok:
        # Teacher forcing on kbench's tokens: rows T-1 .. T+n-2.
        seq = prompt + kb_tokens[:-1]
        T = len(prompt)
        for name, dt in (("fp64", torch.float64), ("fp32", torch.float32)):
            ref = logits_at(model, seq, dt)[T - 1:T - 1 + n]
            errors[name] = rel_l2(kb_logits, ref)
            worst = max(rel_l2(kb_logits[i], ref[i]) for i in range(n))
            if not worst <= tol:
                problems.append(f"logits vs transformers {name}: worst step's rel L2 {worst:.3e} > {tol:g} "
                                f"(all steps {errors[name]:.3e})")
                ok = False
        # Greedy tokens from transformers' own loop, in float64.
        hf_tokens = greedy(model, prompt, n, torch.float64)
        if hf_tokens != kb_tokens:
            k = next(i for i in range(n) if hf_tokens[i] != kb_tokens[i])
            top2 = np.sort(kb_logits[k])[-2:]
            diverged = (f"greedy tokens differ from step {k}: kbench {kb_tokens[k]}, transformers "
                        f"{hf_tokens[k]} (kbench's top-2 margin there {top2[1] - top2[0]:.3e})")
            if not args.gpu:
                problems.append(diverged)
                ok = False
            else:
                # bf16 arithmetic may break a near-tie the other way, after which the
                # free-running sequences part.  Each pick, teacher-forced, must be
                # transformers' own or within this step's logits error of it.
                ref = logits_at(model, seq, torch.float64)[T - 1:T - 1 + n]
                for i in range(n):
                    best, err = int(np.argmax(ref[i])), float(np.max(np.abs(kb_logits[i] - ref[i])))
                    if kb_tokens[i] != best and ref[i][best] - ref[i][kb_tokens[i]] > 2 * err:
                        problems.append(f"step {i}: kbench picked {kb_tokens[i]}, {ref[i][best] - ref[i][kb_tokens[i]]:.3e} "
                                        f"under transformers' {best}, more than twice the step's error {err:.3e}")
                        ok = False
                print(f"    (near-tie: {diverged})")
    status = "PASS" if ok else "FAIL"
    err = " ".join(f"rel L2 {k} {v:.2e}" for k, v in errors.items())
    print(f"{case['name']:18s} {status}  {err}  [{timing}]")
    for p in problems:
        print(f"    {p}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kbench", required=True, help="the kbench binary (build/harness/kbench)")
    ap.add_argument("--work", help="a directory for the checkpoints and logits (default: a temporary one)")
    ap.add_argument("--tokens", type=int, default=32, help="tokens to generate greedily (32)")
    ap.add_argument("--prompt-len", type=int, default=7, help="random prompt length (7)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-4, help="relative L2 bound on each step's logits (1e-4)")
    ap.add_argument("--gpu", action="store_true",
                    help="check the GPU path (bf16) on GPU_CASES, to the bound kbench's check prints")
    ap.add_argument("--case", action="append", help="run only these cases (by name)")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    torch.backends.cuda.matmul.allow_tf32 = False
    kbench = os.path.abspath(args.kbench)
    if not os.access(kbench, os.X_OK):
        sys.exit(f"llama_parity: {args.kbench} is not an executable kbench")
    args.kbench = kbench
    cases = [c for c in (GPU_CASES if args.gpu else CASES) if not args.case or c["name"] in args.case]
    import transformers
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; {args.tokens} tokens from a "
          f"{args.prompt_len}-token prompt; "
          f"{'the GPU path (bf16), bound: what its check prints' if args.gpu else f'bound rel L2 <= {args.tol:g}'}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        results = []
        for c in cases:
            try:
                results.append(check_case(c, args, work))
            except RuntimeError as e:  # kbench refused the checkpoint, or the model is not what was asked
                print(f"{c['name']:18s} FAIL: {e}")
                results.append(False)
    print(f"{sum(results)} of {len(results)} cases passed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
