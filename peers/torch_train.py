#!/usr/bin/env python3
"""`kbench model train` replayed in PyTorch: the training reference against
autograd and torch.optim.AdamW.

    python3 peers/torch_train.py --kbench build/harness/kbench [--data FILE.txt] [--steps N] [--work DIR]
                                 [--loss-out FILE.csv]

It runs `kbench model train --cpu-only` on the text (default: the slice of
the GPL in tests/data) with --save-init, --grads-out, --batches-out and
--loss-csv, then, in float64 on the CPU:

  1. loads kbench's initial weights into transformers' LlamaForCausalLM
     (eager attention, RoPE frequencies set in float64 as kbench computes
     them, RMSNorm in float64 where transformers' takes float32);
  2. on the first step's batch, compares autograd's gradient of every
     weight with kbench's (relative L2 per tensor, printed; bound --grad-tol,
     1e-6, over kbench's gradients rounded to fp32 in their file);
  3. replays every step on kbench's windows with clip_grad_norm_ and AdamW
     at the same hyper-parameters and schedule (warm-up, cosine to lr/10),
     each weight rounded to fp32 after its step as kbench's are, and
     compares each step's loss with kbench's curve (relative --loss-tol,
     1e-6);
  4. writes its own curve in the same columns (--loss-out), which
     `bash plots/loss.sh OUT kbench.csv torch.csv` draws beside kbench's.

Exit 0 when every check passes, 1 otherwise.  Needs torch, transformers,
numpy and safetensors (present on the GPU machines); no hub access.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
import time
import types

import numpy as np
import torch
from safetensors.torch import load_file
from transformers import LlamaForCausalLM

MODEL = dict(vocab=320, d_model=32, layers=2, heads=4, kv_heads=2, seq=32, batch=4)
HYPER = dict(lr=1e-2, weight_decay=0.1, clip=1.0)


def lr_at(step, steps, warmup, lr):
    """commands/train.c's schedule: linear warm-up, cosine to lr / 10."""
    if step < warmup:
        return lr * (step + 1) / warmup
    span = steps - warmup
    t = (step - warmup) / (span - 1) if span > 1 else 1.0
    return lr * (0.1 + 0.45 * (1 + math.cos(math.pi * t)))


def run_kbench(args, work):
    paths = {k: os.path.join(work, k) for k in ("init", "grads")}
    paths["batches"] = os.path.join(work, "batches.npy")
    paths["loss"] = os.path.join(work, "kbench.csv")
    cmd = [args.kbench, "model", "train", "--cpu-only", "--data", args.data, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--vocab", str(MODEL["vocab"]), "--d-model", str(MODEL["d_model"]),
           "--layers", str(MODEL["layers"]), "--heads", str(MODEL["heads"]), "--kv-heads", str(MODEL["kv_heads"]),
           "--seq", str(MODEL["seq"]), "--batch", str(MODEL["batch"]), "--lr", str(HYPER["lr"]),
           "--weight-decay", str(HYPER["weight_decay"]), "--clip", str(HYPER["clip"]), "--seed", str(args.seed),
           "--save-init", paths["init"], "--grads-out", paths["grads"], "--batches-out", paths["batches"],
           "--loss-csv", paths["loss"]] + (["--tied"] if args.tied else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"torch_train: kbench failed ({r.returncode}): {r.stderr.strip() or r.stdout[-500:]}")
    with open(paths["loss"]) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return paths, rows


def rms_norm_f64(self, x):
    """RMSNorm in the input's dtype: transformers' computes it in float32
    whatever the input, which would cost a float64 replay 1e-7."""
    eps = getattr(self, "variance_epsilon", None) or getattr(self, "eps")
    return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def load_model(init):
    model = LlamaForCausalLM.from_pretrained(init, attn_implementation="eager").to(torch.float64)
    for m in model.modules():
        if type(m).__name__.endswith("RMSNorm"):
            m.forward = types.MethodType(rms_norm_f64, m)
    cfg = model.config
    rotary = model.model.rotary_emb
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    theta = getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]
    exact = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    for name in ("inv_freq", "original_inv_freq"):
        if hasattr(rotary, name):
            getattr(rotary, name).data = exact.clone()
    return model


def loss_of(model, window):
    ids = torch.as_tensor(window, dtype=torch.long)
    logits = model(input_ids=ids[:, :-1], use_cache=False).logits
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def rel_l2(a, b):
    return float((a - b).norm() / max(float(b.norm()), 1e-300))


def check_grads(model, window, grads_dir, tol):
    model.zero_grad()
    loss_of(model, window).backward()
    theirs = load_file(os.path.join(grads_dir, "model.safetensors"))
    worst, ok = 0.0, True
    for name, p in model.named_parameters():
        if name not in theirs:
            if name == "lm_head.weight" and model.config.tie_word_embeddings:
                continue
            print(f"  {name}: not in kbench's gradients")
            ok = False
            continue
        e = rel_l2(theirs[name].to(torch.float64), p.grad)
        worst = max(worst, e)
        print(f"  grad {name:48s} rel L2 {e:.2e}")
        ok &= e <= tol
    print(f"first step's gradients: worst relative L2 {worst:.2e} (bound {tol:g}): {'PASS' if ok else 'FAIL'}")
    return ok


def replay(model, windows, kb_rows, args):
    params = [p for p in model.parameters()]
    opt = torch.optim.AdamW(params, lr=HYPER["lr"], betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=HYPER["weight_decay"], foreach=False)
    out, worst, t0 = [], 0.0, time.perf_counter()
    for step in range(args.steps):
        lr = lr_at(step, args.steps, args.warmup, HYPER["lr"])
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        loss = loss_of(model, windows[step])
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(params, HYPER["clip"]))
        opt.step()
        with torch.no_grad():
            for p in params:  # kbench keeps fp32 weights, its moments in double
                p.copy_(p.to(torch.float32).to(torch.float64))
        kb = float(kb_rows[step]["loss"])
        e = abs(float(loss) - kb) / abs(kb)
        worst = max(worst, e)
        print(f"step {step + 1:3d}  loss torch {float(loss):.9f}  kbench {kb:.9f}  rel {e:.1e}  "
              f"grad norm torch {norm:.6f} kbench {float(kb_rows[step]['grad_norm']):.6f}")
        out.append((step + 1, float(loss), norm, lr, (step + 1) * windows.shape[1] * (windows.shape[2] - 1),
                    time.perf_counter() - t0))
    ok = worst <= args.loss_tol
    print(f"losses over {args.steps} steps: worst relative difference {worst:.2e} (bound {args.loss_tol:g}): "
          f"{'PASS' if ok else 'FAIL'}")
    return ok, out


def write_curve(path, rows):
    with open(path, "w") as f:
        f.write("# torch_train.py: transformers' LlamaForCausalLM, float64 on the CPU, kbench's windows\n")
        f.write("step,loss,grad_norm,lr,tokens,wall_s,val_loss\n")
        for r in rows:
            f.write("%d,%.10g,%.10g,%.10g,%d,%.3f,\n" % r)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kbench", required=True, help="the kbench binary (build/harness/kbench)")
    ap.add_argument("--data", default=os.path.join(here, "..", "tests", "data", "gpl3_slice.txt"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tied", action="store_true", help="tie the head to the embedding")
    ap.add_argument("--work", help="a directory for kbench's files (default: a temporary one)")
    ap.add_argument("--loss-out", help="write PyTorch's loss curve here, in kbench's columns")
    ap.add_argument("--grad-tol", type=float, default=1e-6)
    ap.add_argument("--loss-tol", type=float, default=1e-6)
    args = ap.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        paths, kb_rows = run_kbench(args, work)
        windows = np.load(paths["batches"]).astype(np.int64)
        model = load_model(paths["init"])
        ok = check_grads(model, windows[0], paths["grads"], args.grad_tol)
        model = load_model(paths["init"])  # the replay starts from the same weights
        replay_ok, rows = replay(model, windows, kb_rows, args)
        if args.loss_out:
            write_curve(args.loss_out, rows)
            print(f"wrote {args.loss_out}")
    sys.exit(0 if ok and replay_ok else 1)


if __name__ == "__main__":
    main()
