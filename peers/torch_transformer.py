#!/usr/bin/env python3
"""Check `kbench model seq2seq` against torch.nn.Transformer, and time PyTorch.

    python3 peers/torch_transformer.py --kbench build/harness/kbench --work DIR
            [--cpu-only] [--skip-timing] [--csv RUN.csv]

Parity (always): for each case below this builds a seeded, eval-mode
torch.nn.Transformer (post-LN, ReLU, dropout 0), perturbs its LayerNorms and
attention biases so that a forward dropping any of them is caught, and writes
its state_dict to DIR/<case>.safetensors and seeded inputs in [-1, 1] to
DIR/<case>.src.npy and .tgt.npy.  It runs `kbench model seq2seq` on them
(--cpu-only passes through to kbench: its double-precision C reference
instead of the GPU path) and compares kbench's output with PyTorch's forward
in float64 on the CPU.  PyTorch's own fp32 error (TF32 off) is printed beside
it for scale.  A case passes when kbench exits 0 and its relative L2 error is
at most 1e-4; the script exits 1 when any case fails.

Timing (unless --skip-timing; needs CUDA): PyTorch eager fp32, TF32 off, of
one encoder layer, one causal decoder layer and the whole 6+6 model at
B=32, T=128, D=512, H=8, F=2048.  CUDA events around each forward, the L2
flushed before each sample outside the timed region.  With --csv the rows are
added to that kbench CSV (variant `torch`), rewritten through a rename, with
raw timings only: `kbench derive RUN.csv` fills their GFLOP/s and the rest.

The safetensors writer needs only numpy, so the file format can be checked
on a machine without PyTorch.
"""
import argparse
import copy
import csv
import io
import json
import os
import statistics
import subprocess
import sys

import numpy as np

try:
    import torch
    from torch import nn
except ImportError:  # --help and write_safetensors still work without it
    torch = None

TOL_REL_L2 = 1e-4
WARMUP, SAMPLES = 20, 50
FLUSH_BYTES = 256 << 20

SMALL = dict(B=3, Ts=17, Tt=11, D=64, H=4, F=128, L=2)
MEDIUM = dict(B=2, Ts=128, Tt=96, D=512, H=8, F=2048, L=6)
CASES = [("small", SMALL, True, 1), ("medium", MEDIUM, True, 2), ("small-nocausal", SMALL, False, 3)]


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> array, written as F32 in the given order, packed."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # pad as the reference writer does: data starts 8-aligned
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def build_model(c, seed):
    torch.manual_seed(seed)
    model = nn.Transformer(d_model=c["D"], nhead=c["H"], num_encoder_layers=c["L"],
                           num_decoder_layers=c["L"], dim_feedforward=c["F"], dropout=0.0,
                           activation="relu", norm_first=False, batch_first=True)
    # PyTorch starts LayerNorms at (1, 0) and attention biases at 0, which
    # would hide a forward that skips them.
    with torch.no_grad():
        for name, p in model.named_parameters():
            parent, leaf = name.split(".")[-2:]
            u = torch.rand_like(p) * 2 - 1
            if parent.startswith("norm"):
                p.copy_(1 + 0.1 * u if leaf == "weight" else 0.1 * u)
            elif leaf == "in_proj_bias" or (parent == "out_proj" and leaf == "bias"):
                p.copy_(0.1 * u)
    return model.eval()


def torch_forward(model, src, tgt, causal, dtype, device):
    """The model's output for numpy inputs, as float64 numpy."""
    m = copy.deepcopy(model).to(device=device, dtype=dtype).eval()
    s = torch.from_numpy(src).to(device=device, dtype=dtype)
    t = torch.from_numpy(tgt).to(device=device, dtype=dtype)
    mask = (nn.Transformer.generate_square_subsequent_mask(t.shape[1], device=device, dtype=dtype)
            if causal else None)
    with torch.inference_mode():
        out = m(s, t, tgt_mask=mask, tgt_is_causal=causal)  # dense tensors, no padding masks
    return out.double().cpu().numpy()


def set_fastpath(enabled):
    # The truth should be the plain composed forward, not the fused eval kernels.
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        mha.set_fastpath_enabled(enabled)


def errors(a, ref):
    if a is None or a.shape != ref.shape:
        return float("inf"), float("inf")
    diff = a.astype(np.float64) - ref
    if not np.isfinite(diff).all():
        return float("inf"), float("inf")
    return float(np.abs(diff).max()), float(np.linalg.norm(diff) / np.linalg.norm(ref))


def run_kbench(args, name, c, causal):
    """Write the case's files, run kbench on them; (exit code, output or None)."""
    w = os.path.join(args.work, name)
    out = f"{w}.out.npy"
    cmd = [args.kbench, "model", "seq2seq", "--weights", f"{w}.safetensors", "--heads", str(c["H"]),
           "--src-npy", f"{w}.src.npy", "--tgt-npy", f"{w}.tgt.npy", "--out", out,
           "--csv", f"{w}.kbench.csv"]
    cmd += ([] if causal else ["--no-causal"]) + (["--cpu-only"] if args.cpu_only else [])
    if os.path.exists(out):
        os.remove(out)  # never compare against a previous run's output
    print("$", " ".join(cmd), flush=True)
    try:
        rc = subprocess.run(cmd).returncode
    except OSError as e:  # no such binary, not executable
        print(f"torch_transformer: cannot run {args.kbench}: {e}", flush=True)
        return 127, None
    return rc, (np.load(out) if os.path.exists(out) else None)


def parity_case(args, name, c, causal, seed):
    model = build_model(c, seed)
    state = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    w = os.path.join(args.work, name)
    write_safetensors(f"{w}.safetensors", state, {"format": "pt"})
    rng = np.random.default_rng(seed)
    src = rng.uniform(-1, 1, (c["B"], c["Ts"], c["D"])).astype(np.float32)
    tgt = rng.uniform(-1, 1, (c["B"], c["Tt"], c["D"])).astype(np.float32)
    np.save(f"{w}.src.npy", src)
    np.save(f"{w}.tgt.npy", tgt)

    set_fastpath(False)
    truth = torch_forward(model, src, tgt, causal, torch.float64, "cpu")
    set_fastpath(True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    fp32 = torch_forward(model, src, tgt, causal, torch.float32, device)
    rc, out = run_kbench(args, name, c, causal)

    k_max, k_rel = errors(out, truth)
    t_max, t_rel = errors(fp32, truth)
    ok = rc == 0 and k_rel <= TOL_REL_L2
    shape = "x".join(map(str, truth.shape))
    why = "" if rc == 0 else f" (kbench exit {rc})"
    print(f"{name:15s} {shape:12s} kbench: max {k_max:.3e} rel_l2 {k_rel:.3e} | "
          f"torch-fp32 ({device}): max {t_max:.3e} rel_l2 {t_rel:.3e}  "
          f"{'PASS' if ok else 'FAIL'}{why}", flush=True)
    return ok


def encoder_layer_flops(B, T, D, F):
    n = B * T
    return 8 * n * D * D + 4 * n * D * F + 4 * B * T * T * D


def decoder_layer_flops(B, Ts, Tt, D, F, causal):
    nt, ns = B * Tt, B * Ts
    self_scores = (2 if causal else 4) * B * Tt * Tt * D  # QK^T and PV, half skipped when causal
    cross = 4 * nt * D * D + 4 * ns * D * D + 4 * B * Tt * Ts * D
    return 8 * nt * D * D + self_scores + cross + 4 * nt * D * F


def time_forward(fn, flush):
    """Median, min, max (ms), relative stdev and sample count of fn()."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(SAMPLES):
        flush.zero_()  # queued before `start`, so the flush itself is not timed
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop))
    return statistics.median(ms), min(ms), max(ms), statistics.stdev(ms) / statistics.fmean(ms), len(ms)


def timing_cases():
    """(op, shape_fields, dims, causal, module, forward, flops, activation elements)."""
    B, T, D, H, F, L = 32, 128, 512, 8, 2048, 6
    kw = dict(dim_feedforward=F, dropout=0.0, activation="relu", norm_first=False, batch_first=True)
    dev = "cuda"
    x, mem = (torch.rand(B, T, D, device=dev) * 2 - 1 for _ in range(2))
    mask = nn.Transformer.generate_square_subsequent_mask(T, device=dev)
    enc = nn.TransformerEncoderLayer(D, H, **kw).to(dev).eval()
    dec = nn.TransformerDecoderLayer(D, H, **kw).to(dev).eval()
    full = nn.Transformer(D, H, num_encoder_layers=L, num_decoder_layers=L, **kw).to(dev).eval()
    dec_flops = decoder_layer_flops(B, T, T, D, F, True)
    return [
        ("encoder-layer", "BxTxDxHxFxL", [B, T, D, H, F, 1], False, enc,
         lambda: enc(x), encoder_layer_flops(B, T, D, F), 2 * B * T * D),
        ("decoder-layer", "BxTsxTtxDxHxFxL", [B, T, T, D, H, F, 1], True, dec,
         lambda: dec(x, mem, tgt_mask=mask, tgt_is_causal=True), dec_flops, 3 * B * T * D),
        ("seq2seq", "BxTsxTtxDxHxFxLexLd", [B, T, T, D, H, F, L, L], True, full,
         lambda: full(mem, x, tgt_mask=mask, tgt_is_causal=True),
         L * encoder_layer_flops(B, T, D, F) + L * dec_flops, 3 * B * T * D),
    ]


def run_timing():
    flush = torch.empty(FLUSH_BYTES // 4, device="cuda")
    results = []
    print(f"\n{'op':14s} {'shape':28s} {'median ms':>10s} {'min':>9s} {'max':>9s} {'rsd %':>6s}", flush=True)
    with torch.inference_mode():
        for op, fields, dims, causal, module, fn, flops, act in timing_cases():
            finite = bool(torch.isfinite(fn()).all())
            med, lo, hi, rsd, n = time_forward(fn, flush)
            # Bytes: each weight read once plus the activations in and out, all
            # fp32 -- a floor on traffic, simplest to count from the module.
            nbytes = 4 * (sum(p.numel() for p in module.parameters()) + act)
            shape = "x".join(map(str, dims)) + ("c" if causal else "")
            results.append(dict(op=op, shape_fields=fields, shape=shape, dims=dims, flops=flops,
                                bytes=nbytes, timing=(med, lo, hi, rsd, n), finite=finite))
            print(f"{op:14s} {shape:28s} {med:10.4f} {lo:9.4f} {hi:9.4f} {100 * rsd:6.2f}"
                  f"{'' if finite else '  NaN/Inf!'}", flush=True)
    return results


def torch_row(fields, r):
    med, lo, hi, rsd, n = r["timing"]
    values = dict(op=r["op"], variant="torch", dtype="f32", math="f32", shape_fields=r["shape_fields"],
                  shape=r["shape"], flops=f"{r['flops']:.0f}", bytes=f"{r['bytes']:.0f}",
                  median_ms=f"{med:.6f}", min_ms=f"{lo:.6f}", max_ms=f"{hi:.6f}",
                  rel_stdev_pct=f"{100 * rsd:.3f}", samples=str(n),
                  l2="cold", family="model", status="PASS" if r["finite"] else "FAIL",
                  reason="" if r["finite"] else "NaN/Inf in PyTorch's output")
    values.update({f"d{i + 1}": str(v) for i, v in enumerate(r["dims"])})
    row = {k: "" for k in fields}
    row.update({k: v for k, v in values.items() if k in row})  # an older schema lacks d7, d8
    return row


def append_csv(path, results):
    """Add the torch rows to a kbench CSV, replacing torch rows of the same op and shape."""
    with open(path) as f:
        lines = f.read().splitlines()
    meta = [l for l in lines if l.startswith("#") and not l.startswith("# torch: ")]
    reader = csv.DictReader(io.StringIO("\n".join(l for l in lines if not l.startswith("#"))))
    fields, rows = reader.fieldnames, list(reader)
    if not fields:
        sys.exit(f"torch_transformer: {path} has no CSV header")
    new = [torch_row(fields, r) for r in results]
    done = {(r["op"], r["shape"]) for r in new}
    rows = [r for r in rows if not (r.get("variant") == "torch" and (r.get("op"), r.get("shape")) in done)]
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        f.write("".join(m + "\n" for m in meta + [f"# torch: {torch.__version__}"]))
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows + new)
    os.replace(tmp, path)
    print(f"torch_transformer: added {len(new)} torch rows to {path}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kbench", required=True, help="path to the kbench binary")
    ap.add_argument("--work", required=True, help="directory for weights, inputs and outputs")
    ap.add_argument("--cpu-only", action="store_true", help="pass --cpu-only to kbench")
    ap.add_argument("--skip-timing", action="store_true", help="parity only")
    ap.add_argument("--csv", help="kbench CSV to add the torch timing rows to")
    args = ap.parse_args()
    if torch is None:
        sys.exit("torch_transformer: PyTorch is not installed")
    if args.csv and not os.path.isfile(args.csv):
        sys.exit(f"torch_transformer: {args.csv}: no such kbench CSV")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.work, exist_ok=True)
    print(f"torch {torch.__version__}, CUDA {'available' if torch.cuda.is_available() else 'not available'}",
          flush=True)

    ok = all([parity_case(args, name, c, causal, seed) for name, c, causal, seed in CASES])
    print(f"parity: {'PASS' if ok else 'FAIL'}", flush=True)

    if not args.skip_timing and torch.cuda.is_available():
        results = run_timing()
        if args.csv:
            append_csv(args.csv, results)
    elif not args.skip_timing:
        print("timing skipped: no CUDA device", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
