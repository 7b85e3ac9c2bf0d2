#!/usr/bin/env python3
"""Time PyTorch on the shapes of a kbench run and add its rows to that CSV.

    python3 peers/torch_peers.py RUN.csv [--ops matmul,softmax,...] [--max-time S]

For every (op, shape) that RUN.csv timed, this times the PyTorch equivalent
(variant `torch`) the way kbench does: CUDA events around each call, warm-up
by time, L2 flushed between samples by writing a buffer allocated beforehand,
samples until the median's relative noise is under 1% or the time cap, and
the median, min, max and relative stdev.  Each output is compared with a
float64 PyTorch computation on the same inputs.  The rows are added in
kbench's CSV schema, and the file is rewritten through a temporary file and
a rename.  kbench itself never needs Python; this is an optional peer.

The rows carry raw timings and the FLOP and byte counts of kbench's row of
the same op, shape and dtype; `kbench derive RUN.csv` then fills their
GFLOP/s, GB/s, speedups and roofline percentages the way the sweep does
(tools/reference_run.sh runs it).  matmul runs with TF32 off (plain fp32, as
kbench's baseline) and, in bf16 and f16, without cuBLAS's reduced-precision
reductions (split reductions added in the 16-bit type), since kbench's ops
accumulate in fp32 throughout.  The shapes named by --compile are also timed under
torch.compile (variant torch_compile), and every row reports the device
memory its call took beyond its inputs and outputs (workspace_mib).
"""
import argparse
import csv
import io
import math
import os
import statistics
import sys
import time

try:
    import torch
except ImportError:
    sys.exit("torch_peers: PyTorch is not installed")

EPS = 1e-5
# kbench's dtypes as PyTorch's, for the rows this script adds a peer to.
TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "e4m3": torch.float8_e4m3fn}


def make_inputs(op, d, gen, dtype=torch.float32, causal=False):
    """Inputs in [-1, 1], as kbench draws them, and the op's callable."""
    def u(*shape):
        return (torch.rand(*shape, device="cuda", generator=gen) * 2 - 1).to(dtype)
    u.gen = gen

    if op == "attention":
        # BxHxTqxTkxD[xHkv]: K and V at Hkv heads (grouped-query attention),
        # which SDPA takes with enable_gqa (query head h reads KV head
        # h // (H // Hkv), as kbench's contract).
        B, H, Tq, Tk, D = d[:5]
        Hkv = d[5] if len(d) > 5 else H
        sdpa = torch.nn.functional.scaled_dot_product_attention
        gqa = {"enable_gqa": True} if Hkv != H else {}
        if causal and Tq != Tk:
            # SDPA's is_causal is aligned to the top left (its documented
            # equivalent masks with ones(L, S).tril(diagonal=0)); kbench's
            # mask is aligned to the bottom right (query i sees keys
            # j <= i + Tk - Tq), so that mask is passed explicitly.  An
            # explicit mask may take a slower SDPA backend than is_causal.
            mask = torch.ones(Tq, Tk, dtype=torch.bool, device="cuda").tril(diagonal=Tk - Tq)
            fn = lambda q, k, v: sdpa(q, k, v, attn_mask=mask, **gqa)
        else:
            fn = lambda q, k, v: sdpa(q, k, v, is_causal=causal, **gqa)
        return (u(B, H, Tq, D), u(B, Hkv, Tk, D), u(B, Hkv, Tk, D)), fn
    if op == "copy":
        x, y = u(d[0]), torch.empty(d[0], device="cuda")
        return (x,), lambda x: y.copy_(x)
    if op == "matmul":
        M, N, K = d
        return (u(M, K), u(K, N)), torch.matmul
    if op == "matmul_fp8":  # MxNxK: torch._scaled_mm (cuBLASLt) on K-major A and B, kbench's scales
        M, N, K = d
        scales = (torch.tensor(2.0, device="cuda"), torch.tensor(0.75, device="cuda"))

        def scaled_mm(a, b, sa, sb):
            if a.dtype == torch.float64:  # the check's reference: the exact product of the same values
                return (a @ b.t()) * sa * sb
            return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                    use_fast_accum=False)
        return (u(M, K), u(N, K)) + scales, scaled_mm
    if op.endswith("_backward") or op in ("cross_entropy", "linear_cross_entropy"):
        return backward_inputs(op, d, u)
    if op == "adamw":
        return adamw_inputs(d, u)
    if op not in ("softmax", "layernorm", "add_layernorm", "rmsnorm"):
        return None, None  # no PyTorch peer written for this op
    R, C = d
    if op == "softmax":
        return (u(R, C),), lambda x: torch.softmax(x, dim=-1)
    if op == "layernorm":
        return (u(R, C), u(C), u(C)), lambda x, g, b: torch.nn.functional.layer_norm(x, (C,), g, b, EPS)
    if op == "add_layernorm":
        def add_ln(x, r, g, b):
            s = x + r
            return torch.nn.functional.layer_norm(s, (C,), g, b, EPS), s
        return (u(R, C), u(R, C), u(C), u(C)), add_ln
    if op == "rmsnorm":
        return (u(R, C), u(C)), lambda x, g: torch.nn.functional.rms_norm(x, (C,), g, EPS)
    return None, None


def backward_inputs(op, d, u):
    """The backward ops as PyTorch's eager autograd runs them: the aten
    backward kernels alone, fed the forward's saved tensors (probabilities;
    mean and rstd), as kbench's contract feeds its variants; cross_entropy
    as the loss's forward and backward."""
    aten = torch.ops.aten
    if op == "embedding_backward":  # TxVxD: the table's gradient, eager's scatter kernel
        T, V, D = d
        ids = torch.randint(0, V, (T,), device="cuda", generator=u.gen)
        ids[::4] = 0  # the frequent token kbench plants
        return (u(T, D), ids), lambda dx, ids: aten.embedding_dense_backward(dx, ids, V, -1, False)
    if op == "linear_cross_entropy":  # NxVxD: the head, the loss and their gradients, as a training step
        N, V, D = d
        t = torch.randint(0, V, (N,), device="cuda", generator=u.gen)
        t[1::97] = -100

        def lce(h, w, t):
            h, w = h.detach().requires_grad_(), w.detach().requires_grad_()
            z = (h @ w.t()).float()
            loss = torch.nn.functional.cross_entropy(z, t, ignore_index=-100, label_smoothing=0.1)
            return torch.autograd.grad(loss, (h, w))
        return (u(N, D), u(V, D) / math.sqrt(D), t), lce
    if op == "rope_backward":  # TxHxKVxD
        return rope_backward_inputs(d, u)
    if op == "matmul_backward":  # MxNxK: autograd's two GEMMs for a @ b, on transposed views
        M, N, K = d
        return (u(M, K), u(K, N), u(M, N)), lambda a, b, dc: (dc @ b.t(), a.t() @ dc)
    R, C = d
    if op == "cross_entropy":  # PyTorch's loss forward and its backward, as a training step runs them
        t = torch.randint(0, C, (R,), device="cuda", generator=u.gen)
        t[1::97] = -100  # some ignored rows, as kbench plants them

        def ce(z, t):
            z = z.detach().requires_grad_()
            loss = torch.nn.functional.cross_entropy(z.float(), t, ignore_index=-100, label_smoothing=0.1)
            return torch.autograd.grad(loss, z)[0]
        return (4 * u(R, C), t), ce
    if op == "swiglu_backward":
        def swiglu_backward(gu, dh):  # eager autograd's kernels for silu(g) * u
            g, up = gu.chunk(2, dim=-1)
            return torch.cat([aten.silu_backward(dh * up, g), dh * torch.nn.functional.silu(g)], dim=-1)
        return (u(R, 2 * C), u(R, C)), swiglu_backward
    x, dy, g = u(R, C), u(R, C), u(C)
    if op == "softmax_backward":
        y = torch.softmax(4 * x, dim=-1)
        return (dy, y), lambda dy, y: aten._softmax_backward_data(dy, y, -1, y.dtype)
    # The saved statistics in fp32 whatever x's dtype, as the forward saves
    # them (and kbench's contract feeds them).
    xf = x.float()
    mean, var = xf.mean(-1, keepdim=True), xf.var(-1, unbiased=False, keepdim=True)
    if op == "layernorm_backward":
        rstd = torch.rsqrt(var + EPS)
        return (dy, x, mean, rstd, g), lambda dy, x, m, r, g: aten.native_layer_norm_backward(
            dy, x, [C], m, r, g, torch.zeros_like(g), [True, True, True])
    if op == "rmsnorm_backward" and hasattr(aten, "_fused_rms_norm_backward"):
        rstd = torch.rsqrt((xf * xf).mean(-1, keepdim=True) + EPS)
        return (dy, x, rstd, g), lambda dy, x, r, g: aten._fused_rms_norm_backward(
            dy, x, [C], r, g, [True, True])
    return None, None


def adamw_inputs(d, u):
    """A mixed-precision optimizer step as PyTorch runs it: the gradient
    (bf16: widened to fp32, as the fp32 master's .grad), clip_grad_norm_'s
    norm and in-place clip, torch.optim.AdamW's fused kernel at kbench's
    hyper-parameters at step 10, and the bf16 parameter copied from the
    master.  master, m and v change in place, as kbench's inouts; the timed
    calls repeat the step on the moving state, which costs the same."""
    if not hasattr(torch, "_fused_adamw_"):
        return None, None
    (N,) = d
    s = min(1.0, 1.0 / math.sqrt(N / 3))  # the clipped gradient's size, as kbench draws m and v
    inputs = (u(N), u(N).float(), u(N).float() * s, (u(N).float() * s) ** 2)
    step_t = torch.full((), 10.0, device="cuda")

    def step(grad, master, m, v):
        g = grad if grad.dtype == master.dtype else grad.to(master.dtype)
        norm = torch.linalg.vector_norm(g)
        g.mul_(torch.clamp(1.0 / (norm + 1e-6), max=1.0))  # max_norm 1
        torch._fused_adamw_([master], [g], [m], [v], [], [step_t], lr=1e-3, beta1=0.9, beta2=0.95,
                            weight_decay=0.1, eps=1e-8, amsgrad=False, maximize=False)
        return master, m, v, master.to(torch.bfloat16), norm
    return inputs, step


def rope_backward_inputs(d, u):
    """rope's gradient as a training step's autograd takes it: HF Llama's
    apply_rotary_pos_emb (rotate_half; cos and sin of fp32 angles, cast to
    the activations' dtype) on a fused qkv split into head-major q, k, v,
    differentiated by torch.autograd.grad with kbench's dq, dk and dv.  The
    forward's graph is built once per dtype (the row's, and float64 for the
    check), so a timed call is the backward alone."""
    T, H, KV, D = d
    qkv = u(T, H + 2 * KV, D)
    inv_freq = 10000.0 ** (-torch.arange(0, D, 2, device="cuda", dtype=torch.float32) / D)
    angles = torch.arange(T, device="cuda", dtype=torch.float32)[:, None] * inv_freq
    emb = torch.cat((angles, angles), dim=-1)[:, None, :]  # T x 1 x D: HF's cos and sin layout
    graphs = {}

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    def graph(dtype):
        if dtype not in graphs:
            x = qkv.to(dtype).requires_grad_()
            cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
            q, k, v = x.split((H, KV, KV), dim=1)
            q, k = (q * cos + rotate_half(q) * sin), (k * cos + rotate_half(k) * sin)
            graphs[dtype] = x, (q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1))
        return graphs[dtype]

    def rope_backward(dq, dk, dv):
        x, outs = graph(dq.dtype)
        return torch.autograd.grad(outs, x, (dq, dk, dv), retain_graph=True)[0]
    return (u(H, T, D), u(KV, T, D), u(KV, T, D)), rope_backward


# SDPA's backends whose backward attention_backward is compared with, by
# the variant names their rows take.
SDPA_BACKWARDS = (("torch_cudnn", "CUDNN_ATTENTION"), ("torch_flash", "FLASH_ATTENTION"))


def attention_backward_graph(backend, d, causal, q, k, v, do):
    """dq, dk, dv of SDPA on one backend, as a closure that runs the backward
    alone: the forward (and the log-sum-exp it saves) is made once here, as
    kbench's contract feeds o and lse to its variants."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    H, Tq, Tk = d[1], d[2], d[3]
    Hkv = d[5] if len(d) > 5 else H
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    kw = {"enable_gqa": True} if Hkv != H else {}
    if causal and Tq != Tk:  # kbench's bottom-right causal mask (see make_inputs)
        kw["attn_mask"] = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(diagonal=Tk - Tq)
    else:
        kw["is_causal"] = causal
    with sdpa_kernel(getattr(SDPBackend, backend)):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    return lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)


def attention_backward_peers(fields, base, d, causal, gen, flush, cap_s):
    """One row per SDPA backend that takes the shape; its error is that of
    the first head of the first batch against the math backend in float64."""
    B, H, Tq, Tk, D = d[:5]
    Hkv = d[5] if len(d) > 5 else H
    if causal and Tq > Tk:
        print(f"torch_peers: attention_backward {base['shape']}: causal with Tq > Tk leaves rows "
              "without a key, where SDPA's backends and its math disagree, skipped", file=sys.stderr)
        return []
    def u(*shape):
        return (torch.rand(*shape, device="cuda", generator=gen) * 2 - 1).to(torch.bfloat16)
    q, k, v, do = u(B, H, Tq, D), u(B, Hkv, Tk, D), u(B, Hkv, Tk, D), u(B, H, Tq, D)
    head = [t[:1, :1] for t in (q, k, v, do)]
    ref = attention_backward_graph("MATH", d, causal, *[t.double() for t in head])()
    rows = []
    for name, backend in SDPA_BACKWARDS:
        try:
            out = attention_backward_graph(backend, d, causal, *head)()
            err = max((o.double() - r).abs().max().item() for o, r in zip(out, ref))
            finite = all(torch.isfinite(o).all().item() for o in out)
            fn = attention_backward_graph(backend, d, causal, q, k, v, do)
            row = peer_row(fields, base, d, time_call(fn, (), flush, cap_s), float(base["flops"]),
                           float(base["bytes"]), err)
            if "workspace_mib" in fields:
                row["workspace_mib"] = f"{workspace_mib(fn, ()):.1f}"
            del fn
        except RuntimeError as e:  # the backend refuses the shape (a mask, a head dim)
            print(f"torch_peers: attention_backward {base['shape']} {name}: {str(e).splitlines()[0]}, skipped",
                  file=sys.stderr)
            continue
        row.update(variant=name, math="bf16")
        if not finite:
            row.update(status="FAIL", reason="NaN/Inf in PyTorch's output")
        rows.append(row)
    return rows


def max_error(fn, inputs, test=None):
    """Largest |out - ref| of test (by default fn itself) against fn in float64.
    The reference runs first, on copies, so that a step that updates its
    inputs in place (adamw) is checked from the state both start from."""
    ref = fn(*[t.double() if t.is_floating_point() else t for t in inputs])
    out = (test or fn)(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    err = max((o.double() - r).abs().max().item() for o, r in zip(outs, refs))
    finite = all(torch.isfinite(o).all().item() for o in outs)
    return err, finite


def workspace_mib(fn, inputs):
    """The device memory one call takes beyond its inputs and its outputs
    (kbench's workspace_mib: what a variant holds for itself)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn(*inputs)
    torch.cuda.synchronize()
    outs = out if isinstance(out, tuple) else (out,)
    kept = sum(o.numel() * o.element_size() for o in outs)
    peak = torch.cuda.max_memory_allocated()
    del out, outs
    return max(0, peak - base - kept) / 2**20


def time_call(fn, inputs, flush, cap_s):
    t0 = time.perf_counter()
    while True:  # warm up by time
        fn(*inputs)
        torch.cuda.synchronize()
        if time.perf_counter() - t0 > 0.05:
            break
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, t0 = [], time.perf_counter()
    while True:
        flush.fill_(len(samples) & 0xff)
        start.record()
        fn(*inputs)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
        if len(samples) >= 3:
            med, mean = statistics.median(samples), statistics.fmean(samples)
            sd = statistics.stdev(samples)
            noise = 1.2533 * sd / math.sqrt(len(samples)) / med
            if noise < 0.01 or time.perf_counter() - t0 > cap_s or len(samples) >= 2000:
                return med, min(samples), max(samples), sd / mean, len(samples)


def read_run(path):
    meta, rows = [], []
    with open(path) as f:
        lines = f.read().splitlines()
    body = [l for l in lines if not l.startswith("#")]
    meta = [l for l in lines if l.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(body)))
    return meta, reader.fieldnames, list(reader)


def write_run(path, meta, fields, rows):
    """The CSV rewritten whole, through a temporary file and a rename."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        f.write("\n".join(meta) + "\n")
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def peer_row(fields, base, d, timing, flops, nbytes, err):
    med, lo, hi, rel, n = timing
    row = {k: "" for k in fields}
    for k in ("op", "dtype", "shape_fields", "shape", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "l2",
              "devices", "family", "axis"):
        row[k] = base.get(k, "")
    row.update(variant="torch", math="f32", flops=f"{flops:.0f}", bytes=f"{nbytes:.0f}",
               median_ms=f"{med:.6f}", min_ms=f"{lo:.6f}", max_ms=f"{hi:.6f}",
               rel_stdev_pct=f"{100 * rel:.3f}", samples=str(n),
               max_abs_err=f"{err:.3e}", status="PASS", reason="")
    return row


# The shapes the backward ladders' targets compare with torch.compile: each
# compiles once (tens of seconds), so only these.
COMPILED = ("softmax_backward:65536x4096", "layernorm_backward:65536x4096", "rmsnorm_backward:65536x4096",
            "linear_cross_entropy:8192x128256x2048", "matmul_backward:8192x4096x4096", "adamw:124000000")


def peer(fields, base, d, dtype, fn, test, inputs, flush, cap_s):
    """One PyTorch row of test (fn itself, or its compiled form), checked
    against fn in float64."""
    err, finite = max_error(fn, [t[:1, :1] for t in inputs] if base["op"] == "attention" else inputs, test)
    timing = time_call(test, inputs, flush, cap_s)
    # The work is kbench's row's: the same op, shape and dtype.
    row = peer_row(fields, base, d, timing, float(base["flops"]), float(base["bytes"]), err)
    row["math"] = "fp8" if dtype in ("e4m3", "e5m2") else dtype  # kbench's name of the arithmetic
    if "workspace_mib" in fields:
        row["workspace_mib"] = f"{workspace_mib(test, inputs):.1f}"
    if not finite:
        row.update(status="FAIL", reason="NaN/Inf in PyTorch's output")
    return row


def report(row):
    print(f"{row['op']:14s} {row['variant']:13s} {row['dtype']:4s} {row['shape']:22s} "
          f"{float(row['median_ms']):10.4f} ms  err {row['max_abs_err']}", flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--ops", default="copy,matmul,matmul_fp8,softmax,layernorm,add_layernorm,rmsnorm,attention,"
                    "softmax_backward,layernorm_backward,rmsnorm_backward,swiglu_backward,cross_entropy,"
                    "embedding_backward,linear_cross_entropy,rope_backward,attention_backward,matmul_backward,adamw")
    ap.add_argument("--max-time", type=float, default=1.0)
    ap.add_argument("--compile", default=",".join(COMPILED),
                    help="op:shape pairs also timed under torch.compile (variant torch_compile); '' for none")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_peers: no CUDA device found")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    meta, fields, rows = read_run(args.csv)
    wanted = set(args.ops.split(","))
    compiled = set(filter(None, args.compile.split(",")))
    shapes = {}
    for r in rows:
        if r["op"] in wanted and r["status"] == "PASS" and r["median_ms"] and not r["variant"].startswith("torch"):
            shapes.setdefault((r["op"], r["shape"], r["dtype"]), r)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2 // 4, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(1)
    added = []
    for (op, shape, dtype), base in sorted(shapes.items()):
        causal = shape.endswith("c")
        d = [int(x) for x in shape.rstrip("c").split("x")]
        tdtype = TORCH_DTYPES.get(dtype)
        if tdtype is None:
            continue  # a dtype this script has no PyTorch form of
        if op == "attention_backward":
            for row in attention_backward_peers(fields, base, d, causal, gen, flush, args.max_time):
                added.append(report(row))
            continue
        inputs, fn = make_inputs(op, d, gen, tdtype, causal)
        if fn is None:
            continue
        forms = [("torch", fn)]
        if f"{op}:{shape}" in compiled:
            forms.append(("torch_compile", torch.compile(fn)))
        for name, test in forms:
            try:
                row = peer(fields, base, d, dtype, fn, test, inputs, flush, args.max_time)
            except torch.cuda.OutOfMemoryError:
                print(f"torch_peers: {op} {shape} {name}: out of device memory, skipped", file=sys.stderr)
                torch.cuda.empty_cache()
                continue
            except RuntimeError as e:  # an aten backward this PyTorch lacks or refuses, a failed compile
                print(f"torch_peers: {op} {shape} {name}: {str(e).splitlines()[0]}, skipped", file=sys.stderr)
                continue
            row["variant"] = name
            added.append(report(row))
        del inputs
    meta = [m for m in meta if not m.startswith("# torch: ")] + [f"# torch: {torch.__version__}"]
    # Torch rows of other ops (the model's, say) stay; this run's ops are replaced.
    write_run(args.csv, meta, fields,
              [r for r in rows if not r["variant"].startswith("torch") or r["op"] not in wanted] + added)
    print(f"torch_peers: added {len(added)} torch rows to {args.csv}")


if __name__ == "__main__":
    main()
