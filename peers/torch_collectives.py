#!/usr/bin/env python3
"""Time PyTorch's NCCL collectives on the shapes of a kbench run and add
their rows to that CSV.

    python3 peers/torch_collectives.py RUN.csv [--max-time S]

For every allreduce, allgather and reduce_scatter shape that RUN.csv timed
across GPUs, one process per GPU (torch.distributed, NCCL backend) times
the same collective (variant `torch`): buffers allocated beforehand, warm-up,
then per sample the ranks meet at a barrier and rank 0 times a batch of
back-to-back calls with CUDA events, as kbench batches its own collective
rows; samples until the median's relative noise is under 1% or the time
cap.  The output is compared with the exact sum (or concatenation) of
the inputs.  The rows carry raw timings and kbench's FLOP and byte counts
of the same op, shape and dtype, so `kbench derive RUN.csv` turns them into
bus bandwidth exactly as it does kbench's own rows.  NVLink multicast
(NVLS) stays off, as in kbench.
"""
import argparse
import math
import os
import socket
import statistics
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError:
    sys.exit("torch_collectives: PyTorch is not installed")

from torch_peers import peer_row, read_run, write_run

OPS = ("allreduce", "allgather", "reduce_scatter")
WARMUP_CALLS = 5
BATCH_MS, BATCH_MAX = 0.2, 64  # as kbench times collectives (docs/measurement.md)


def buffers(op, n, world, rank, dtype):
    """This rank's input and output, inputs in [-1, 1] seeded by rank."""
    gen = torch.Generator(device="cuda").manual_seed(1000 + rank)
    count = n * world if op == "reduce_scatter" else n
    x = (torch.rand(count, device="cuda", generator=gen) * 2 - 1).to(dtype)
    out = torch.empty(n * world if op == "allgather" else n, device="cuda", dtype=dtype)
    return x, out


def call(op, x, out):
    if op == "allreduce":
        dist.all_reduce(out)  # torch reduces in place: `out` holds the input
    elif op == "allgather":
        dist.all_gather_into_tensor(out, x)
    else:
        dist.reduce_scatter_tensor(out, x)


def max_error(op, x, out, world):
    """|out - exact| over the whole output, against float64 on every rank's input."""
    xs = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(xs, x)
    xs = [t.double() for t in xs]
    n = out.numel() // world if op == "allgather" else out.numel()
    rank = dist.get_rank()
    if op == "allreduce":
        ref = sum(xs)
    elif op == "allgather":
        ref = torch.cat(xs)
    else:
        ref = sum(t[rank * n:(rank + 1) * n] for t in xs)
    return (out.double() - ref).abs().max().item(), bool(torch.isfinite(out).all().item())


def timed_calls(op, x, out, calls):
    """Milliseconds a call over `calls` back-to-back calls, on this rank's stream."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dist.barrier()
    start.record()
    for _ in range(calls):
        call(op, x, out)
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / calls


def time_op(op, x, out, cap_s):
    """kbench's rule for collectives: a sample is BATCH_MS of calls back to
    back (one call if it takes longer, at most BATCH_MAX), the first sample
    sets the count and is dropped; rank 0's stream times it."""
    for _ in range(WARMUP_CALLS):  # a count, not a time: every rank must make the same calls
        call(op, x, out)
    torch.cuda.synchronize()
    first = torch.tensor([timed_calls(op, x, out, 1)], device="cuda")
    dist.broadcast(first, 0)  # every rank makes the same number of calls
    ms = first.item()
    calls = 1 if ms >= BATCH_MS else BATCH_MAX if ms * BATCH_MAX < BATCH_MS else math.ceil(BATCH_MS / ms)
    samples, t0, more = [], time.perf_counter(), torch.ones(1, device="cuda")
    while more.item():
        samples.append(timed_calls(op, x, out, calls))
        done = len(samples) >= 3 and (
            1.2533 * statistics.stdev(samples) / math.sqrt(len(samples)) / statistics.median(samples) < 0.01
            or time.perf_counter() - t0 > cap_s or len(samples) >= 2000)
        more.fill_(0 if done else 1)
        dist.broadcast(more, 0)  # every rank stops with rank 0
    med, mean = statistics.median(samples), statistics.fmean(samples)
    return med, min(samples), max(samples), statistics.stdev(samples) / mean, len(samples)


def worker(rank, world, devices, jobs, port, cap_s, results):
    torch.cuda.set_device(devices[rank])
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", devices[rank]))
    for key, op, n, dtype in jobs:
        x, out = buffers(op, n, world, rank, torch.bfloat16 if dtype == "bf16" else torch.float32)
        if op == "allreduce":
            out.copy_(x)
        call(op, x, out)
        err, finite = max_error(op, x, out, world)
        if op == "allreduce":
            out.zero_()  # summed in place sample after sample, zeros stay finite
        timing = time_op(op, x, out, cap_s)
        if rank == 0:
            results[key] = (timing, err, finite)
            print(f"{op:14s} torch {dtype:4s} {n:>11d} x{world} {timing[0]:10.4f} ms  err {err:.2e}", flush=True)
        del x, out
        torch.cuda.empty_cache()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--max-time", type=float, default=1.0)
    args = ap.parse_args()
    meta, fields, rows = read_run(args.csv)
    bases = {}
    for r in rows:
        if r["op"] in OPS and r["status"] == "PASS" and r["median_ms"] and r["variant"] != "torch":
            bases.setdefault((r["op"], r["shape"], r["dtype"], r.get("devices", "")), r)
    groups = {}  # one set of processes per GPU list
    for key in sorted(bases):
        op, shape, dtype, devs = key
        groups.setdefault(devs, []).append((key, op, int(shape), dtype))
    added = []
    for devs, jobs in groups.items():
        devices = [int(d) for d in devs.split("+")] if devs else list(range(torch.cuda.device_count()))
        if len(devices) < 2:
            continue
        results = mp.Manager().dict()
        mp.spawn(worker, args=(len(devices), devices, jobs, free_port(), args.max_time, results),
                 nprocs=len(devices))
        for key, (timing, err, finite) in sorted(results.items()):
            base = bases[key]
            row = peer_row(fields, base, None, timing, float(base["flops"]), float(base["bytes"]), err)
            row["math"] = base["dtype"]
            if not finite:
                row.update(status="FAIL", reason="NaN/Inf in PyTorch's output")
            added.append(row)
    meta = [m for m in meta if not m.startswith("# torch: ")] + [f"# torch: {torch.__version__}"]
    write_run(args.csv, meta, fields, [r for r in rows if r["variant"] != "torch" or r["op"] not in OPS] + added)
    print(f"torch_collectives: added {len(added)} torch rows to {args.csv}")


if __name__ == "__main__":
    main()
