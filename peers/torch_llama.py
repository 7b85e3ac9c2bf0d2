#!/usr/bin/env python3
"""Time Hugging Face's LlamaForCausalLM decoding and prefilling in bf16 on one GPU.

    python3 peers/torch_llama.py [--context 1024] [--tokens 64] [--modes eager,compile]
            [--layers 16 --d-model 2048 ...] [--copy-gb-s 3000] [--csv RUN.csv]

A random LlamaForCausalLM built offline from a LlamaConfig (Llama-3.2-1B's
shapes unless the flags say otherwise: tied embeddings, GQA, default RoPE,
SDPA attention), seeded, bf16, on CUDA, eval mode, no grad.

Decode: a seeded random prompt of --context ids is prefilled into a KV cache
(untimed), then --tokens greedy steps run one token at a time, the argmax
fed back without leaving the GPU; torch.cuda.synchronize + perf_counter
around the whole loop.  Figure: the median over --repeats repeats (each
prefilling again, after a warm-up) of the loop's time / --tokens.
  eager    plain forward with a StaticCache (DynamicCache when StaticCache
           cannot be built or run; the table says which);
  compile  transformers' static-cache recipe: StaticCache and
           torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
           for the steps (prefill eager), cache_position passed each step,
           two warm-up repeats for compilation and CUDA graph capture.  A
           failure is one line, not an error.
Prefill: one eager forward over --prefill-len ids (last position's logits
only where the model takes logits_to_keep), CUDA events, median of 10 after
2 warm-ups; TFLOP/s of 2 * linear weights * T + the LM head + causal
attention 2 * layers * heads * head_dim * T^2.

Bound of a decode step: every weight read once (a tied embedding once, as the
LM head; an untied input embedding not at all, one row is looked up) plus
the KV cache at --context, at --copy-gb-s.  --csv adds rows (llama-decode,
llama-prefill) to that kbench CSV as torch_transformer.py adds its own:
variant `torch` for PyTorch's best of each (compiled decode, eager
prefill), `torch_eager` for the eager decode.
Exit status 1 when the eager decode fails or gives NaN/Inf, 2 when --csv
names no file.
"""
import argparse
import csv
import inspect
import io
import os
import statistics
import sys
import time

try:
    import torch
except ImportError:  # --help works without it
    torch = None

PREFILL_WARMUP, PREFILL_SAMPLES = 2, 10
COMPILE_WARMUP = 2  # repeats: the first compiles, the next records the CUDA graph
SHAPE_FIELDS = "LxDxHxKVxFxVxT"


def short(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"


def build_model(a):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=a.d_model, intermediate_size=a.d_ff, num_hidden_layers=a.layers,
                      num_attention_heads=a.heads, num_key_value_heads=a.kv_heads, vocab_size=a.vocab,
                      tie_word_embeddings=not a.untied, rope_theta=10000.0, rope_scaling=None,
                      rms_norm_eps=1e-5, max_position_embeddings=max(4096, a.context + a.tokens + 8),
                      hidden_act="silu", attention_bias=False, mlp_bias=False, attention_dropout=0.0,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None, attn_implementation="sdpa")
    torch.manual_seed(a.seed)
    # Built in place on the GPU in bf16, as from_pretrained(torch_dtype=...)
    # does: no fp32 copy on the host, and RoPE's inv_freq stays fp32.
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(prev)
    return model.eval()


def last_logits_kwargs(model):
    """{logits_to_keep: 1} under the name this transformers uses, or {} (full logits)."""
    params = inspect.signature(model.forward).parameters
    return next(({n: 1} for n in ("logits_to_keep", "num_logits_to_keep") if n in params), {})


def static_cache(model, max_len):
    """A StaticCache, trying each constructor transformers has had."""
    from transformers import StaticCache
    c, dev, dt = model.config, model.device, model.dtype
    forms = [dict(config=c, max_batch_size=1, max_cache_len=max_len, device=dev, dtype=dt),  # 4.38-4.55
             dict(config=c, batch_size=1, max_cache_len=max_len, device=dev, dtype=dt),      # 4.42-4.45
             dict(config=c, max_cache_len=max_len)]  # 4.56+ and 5.x: allocated on first use
    errors = []
    for kw in forms:
        try:
            return StaticCache(**kw)
        except (TypeError, ValueError) as e:
            errors.append(short(e))
    raise RuntimeError("no StaticCache constructor fits: " + " | ".join(errors))


def reusing(cache):
    """A fresh_cache() for one StaticCache: the same tensors every time (CUDA
    graphs hold their addresses), zeroed from the second use on (a lazily
    allocated cache has nothing to reset before its first)."""
    used = []

    def fresh():
        if used:
            cache.reset()
        used.append(True)
        return cache
    return fresh


def decode_once(model, step, fresh_cache, prompt, steps, kw, mark=None):
    """Prefill prompt (untimed), then `steps` greedy steps through step();
    (ms per token, token tensors, last logits finite)."""
    cache = fresh_cache()
    pos = torch.arange(prompt.shape[1], device=prompt.device)
    logits = model(input_ids=prompt, cache_position=pos, past_key_values=cache, use_cache=True,
                   return_dict=False, **kw)[0]
    tok, pos = logits[:, -1:].argmax(-1), pos[-1:] + 1
    tokens = []
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        if mark:
            mark()  # a new step for CUDA graph trees: last step's outputs may be overwritten
        logits = step(input_ids=tok, cache_position=pos, past_key_values=cache, use_cache=True,
                      return_dict=False)[0]
        tok = logits[:, -1:].argmax(-1)  # (1, 1): the next input; read before the next replay
        tokens.append(tok)
        pos = pos + 1  # a fresh tensor, not an in-place add on an input the graph may hold
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / steps
    return ms, tokens, bool(torch.isfinite(logits).all())


def timed_repeats(label, run, repeats):
    ms, tokens, finite = [], None, True
    for i in range(repeats):
        t, tokens, ok = run()
        ms.append(t)
        finite &= ok
        print(f"  {label}: repeat {i + 1}/{repeats}: {t:.4f} ms/token", flush=True)
    return dict(ms=ms, tokens=[int(t) for t in torch.cat(tokens, 1)[0].tolist()], finite=finite)


def run_eager(model, a, prompt, kw):
    from transformers import DynamicCache
    max_len = a.context + a.tokens
    choices = []
    try:
        choices.append(("StaticCache", reusing(static_cache(model, max_len))))
    except Exception as e:
        print(f"eager: StaticCache failed ({short(e)}); using DynamicCache", flush=True)
    choices.append(("DynamicCache", DynamicCache))
    for i, (name, fresh) in enumerate(choices):
        run = lambda: decode_once(model, model, fresh, prompt, a.tokens, kw)
        try:
            print(f"eager ({name}): warm-up", flush=True)
            run()
            r = timed_repeats(f"eager ({name})", run, a.repeats)
            return dict(r, mode="eager", cache=name)
        except Exception as e:
            if i + 1 == len(choices):
                raise
            print(f"eager: {name} failed ({short(e)}); using DynamicCache", flush=True)


def run_compile(model, a, prompt, kw):
    fresh = reusing(static_cache(model, a.context + max(a.tokens, 3)))
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    for fullgraph in (True, False):
        step = torch.compile(model.forward, mode="reduce-overhead", fullgraph=fullgraph)
        run = lambda steps=a.tokens: decode_once(model, step, fresh, prompt, steps, kw, mark)
        try:
            for i in range(COMPILE_WARMUP):  # >= 3 steps each, for compilation and graph capture
                t0 = time.perf_counter()
                print(f"compile (fullgraph={fullgraph}): warm-up {i + 1}/{COMPILE_WARMUP} ...", flush=True)
                ms = run(max(a.tokens, 3))[0]
                print(f"  done in {time.perf_counter() - t0:.1f} s ({ms:.4f} ms/token)", flush=True)
            break
        except Exception as e:
            if not fullgraph:
                raise
            print(f"compile: fullgraph=True failed ({short(e)}); retrying without fullgraph", flush=True)
            torch._dynamo.reset()
    r = timed_repeats("compile", run, a.repeats)
    return dict(r, mode="compile", cache="StaticCache" + ("" if fullgraph else ", not fullgraph"))


def time_prefill(model, ids, kw):
    """Median, min, max (ms), relative stdev and sample count of one forward."""
    fn = lambda: model(input_ids=ids, use_cache=False, return_dict=False, **kw)[0]
    for _ in range(PREFILL_WARMUP):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(PREFILL_SAMPLES):
        start.record()
        logits = fn()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop))
    return stats(ms), bool(torch.isfinite(logits).all())


def stats(ms):
    """Median, min, max, relative stdev and count of a list of times."""
    return statistics.median(ms), min(ms), max(ms), statistics.stdev(ms) / statistics.fmean(ms), len(ms)


def llama_row(fields, r):
    med, lo, hi, rsd, n = r["timing"]
    values = dict(op=r["op"], variant=r["variant"], dtype="bf16", math="bf16", shape_fields=SHAPE_FIELDS,
                  shape=r["shape"], flops=f"{r['flops']:.0f}", bytes=f"{r['bytes']:.0f}",
                  median_ms=f"{med:.6f}", min_ms=f"{lo:.6f}", max_ms=f"{hi:.6f}",
                  rel_stdev_pct=f"{100 * rsd:.3f}", samples=str(n),
                  # Not flushed, but each sample streams the weights (GBs) through
                  # a 50 MB L2, so nothing of one sample survives to the next.
                  l2="cold", family="model", status="PASS" if r["finite"] else "FAIL",
                  reason="" if r["finite"] else "NaN/Inf in the logits")
    values.update({f"d{i + 1}": str(v) for i, v in enumerate(r["dims"])})
    row = {k: "" for k in fields}
    row.update({k: v for k, v in values.items() if k in row})  # an older schema lacks d7, d8
    return row


def append_csv(path, results):
    """Add the rows to a kbench CSV, replacing rows of the same op, variant and shape."""
    import transformers
    with open(path) as f:
        lines = f.read().splitlines()
    ours = ("# torch: ", "# transformers: ")
    meta = [l for l in lines if l.startswith("#") and not l.startswith(ours)]
    reader = csv.DictReader(io.StringIO("\n".join(l for l in lines if not l.startswith("#"))))
    fields, rows = reader.fieldnames, list(reader)
    if not fields:
        sys.exit(f"torch_llama: {path} has no CSV header")
    new = [llama_row(fields, r) for r in results]
    done = {(r["op"], r["variant"], r["shape"]) for r in new}
    rows = [r for r in rows if (r.get("op"), r.get("variant"), r.get("shape")) not in done]
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        f.write("".join(m + "\n" for m in meta + [f"# torch: {torch.__version__}",
                                                  f"# transformers: {transformers.__version__}"]))
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows + new)
    os.replace(tmp, path)
    print(f"torch_llama: added {len(new)} rows to {path}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag, default in (("layers", 16), ("d-model", 2048), ("heads", 32), ("kv-heads", 8), ("d-ff", 8192),
                          ("vocab", 128256)):  # Llama-3.2-1B
        ap.add_argument(f"--{flag}", type=int, default=default, help=f"({default})")
    ap.add_argument("--untied", action="store_true", help="a separate LM head (default: tied to the embedding)")
    ap.add_argument("--context", type=int, default=1024, help="prompt length before the decode steps (1024)")
    ap.add_argument("--tokens", type=int, default=64, help="decode steps per repeat (64)")
    ap.add_argument("--repeats", type=int, default=5, help="timed decode repeats, at least 3 (5)")
    ap.add_argument("--prefill-len", type=int, default=2048, help="prompt length of the prefill timing (2048)")
    ap.add_argument("--modes", default="eager,compile", help="decode modes to run (eager,compile)")
    ap.add_argument("--copy-gb-s", type=float, default=3000.0, help="memory bandwidth of the bound, GB/s (3000)")
    ap.add_argument("--seed", type=int, default=1, help="weights and prompts (1)")
    ap.add_argument("--csv", help="kbench CSV to add the rows to")
    a = ap.parse_args()
    a.repeats = max(3, a.repeats)
    modes = [m for m in a.modes.split(",") if m]
    if set(modes) - {"eager", "compile"} or a.tokens < 1 or a.context < 1 or a.d_model % a.heads:
        ap.error("--modes takes eager,compile; --tokens and --context >= 1; --heads must divide --d-model")
    if a.csv and not os.path.isfile(a.csv):
        print(f"torch_llama: {a.csv}: no such kbench CSV", file=sys.stderr)
        return 2
    if torch is None or not torch.cuda.is_available():
        sys.exit("torch_llama: needs PyTorch with a CUDA device")
    import transformers
    t0 = time.perf_counter()
    model = build_model(a)
    L, D, H, KV, F, V = a.layers, a.d_model, a.heads, a.kv_heads, a.d_ff, a.vocab
    hd, tied = D // H, not a.untied
    # Weights a step reads: every parameter once (parameters() yields a tied
    # matrix once); an untied input embedding is only looked up, one row.
    read_params = sum(p.numel() for p in model.parameters())
    if not tied:
        read_params -= model.get_input_embeddings().weight.numel()
    weight_bytes = 2 * read_params
    kv_bytes = 2 * L * KV * hd * a.context * 2
    decode_bytes = weight_bytes + kv_bytes
    bound_tok_s = a.copy_gb_s * 1e9 / decode_bytes
    kw = last_logits_kwargs(model)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name()}; "
          f"attention {getattr(model.config, '_attn_implementation', '?')}; built in {time.perf_counter() - t0:.1f} s",
          flush=True)
    print(f"L={L} D={D} H={H} KV={KV} head_dim={hd} F={F} V={V} {'tied' if tied else 'untied'}: "
          f"{read_params / 1e9:.3f} G weights read per token ({weight_bytes / 1e9:.3f} GB) + KV cache at "
          f"{a.context}: {kv_bytes / 1e6:.1f} MB; bound {bound_tok_s:.0f} tokens/s at {a.copy_gb_s:g} GB/s; "
          f"last-position logits: {next(iter(kw), 'no (full logits)')}", flush=True)

    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    prompt = torch.randint(0, V, (1, a.context), device="cuda", generator=gen)
    results, decode, ok = [], [], True
    shape = lambda T: f"{L}x{D}x{H}x{KV}x{F}x{V}x{T}" + ("t" if tied else "")
    with torch.no_grad():
        for mode in modes:
            try:
                r = (run_eager if mode == "eager" else run_compile)(model, a, prompt, kw)
            except Exception as e:
                print(f"{mode}: failed: {short(e)}", flush=True)
                ok &= mode != "eager"
                continue
            ok &= r["finite"] or mode != "eager"
            decode.append(r)
            results.append(dict(op="llama-decode", variant="torch" if mode == "compile" else f"torch_{mode}", shape=shape(a.context),
                                dims=[L, D, H, KV, F, V, a.context], flops=2 * read_params, bytes=decode_bytes,
                                timing=stats(r["ms"]), finite=r["finite"]))
            torch.cuda.empty_cache()
        ids = torch.randint(0, V, (1, a.prefill_len), device="cuda", generator=gen)
        timing, finite = time_prefill(model, ids, kw)
    T = a.prefill_len
    linear = L * (2 * D * H * hd + 2 * D * KV * hd + 3 * D * F)  # q, o; k, v; gate, up, down
    flops = 2 * linear * T + 2 * V * D * (1 if kw else T) + 2 * L * H * hd * T * T  # causal: half of 4*..*T^2
    results.append(dict(op="llama-prefill", variant="torch", shape=shape(T), dims=[L, D, H, KV, F, V, T],
                        flops=flops, bytes=weight_bytes, timing=timing, finite=finite))

    print(f"\n{'mode':8s} {'cache':28s} {'ms/token':>9s} {'min':>8s} {'max':>8s} {'tokens/s':>9s} "
          f"{'bound':>7s} {'% bound':>7s}")
    for r in decode:
        med, lo, hi = stats(r["ms"])[:3]
        print(f"{r['mode']:8s} {r['cache']:28s} {med:9.4f} {lo:8.4f} {hi:8.4f} {1e3 / med:9.1f} "
              f"{bound_tok_s:7.0f} {100 * 1e3 / med / bound_tok_s:7.1f}{'' if r['finite'] else '  NaN/Inf!'}")
    print(f"prefill T={T}: {timing[0]:.3f} ms (min {timing[1]:.3f}, max {timing[2]:.3f}), "
          f"{flops / timing[0] / 1e9:.1f} TFLOP/s{'' if finite else '  NaN/Inf!'}", flush=True)
    if len(decode) == 2:  # informational: bf16 near-ties on random weights may differ
        e, c = decode[0]["tokens"], decode[1]["tokens"]
        same = next((i for i, (x, y) in enumerate(zip(e, c)) if x != y), len(e))
        print(f"greedy tokens: {decode[1]['mode']} agrees with {decode[0]['mode']} for the first {same} "
              f"of {len(e)} steps", flush=True)
    if a.csv:
        append_csv(a.csv, results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
