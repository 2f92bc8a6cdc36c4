#!/usr/bin/env python3
"""bench/jetson_table.py [--gpt PATH] [--ctx N] - docs/JETSON.md's memory and speed table, from
libgpt's own estimate: for each model shape and dtype, `gpt info --plan --synthetic SHAPE
--dtype D --device cuda --ctx N --weights host|device --json` (the tensor table through the
CUDA backend's placement and context plan, nothing loaded; it needs a CUDA build, not a GPU,
and not a Jetson). Printed as Markdown:

1. memory: weights + one context of N tokens (host + device: on a Jetson they share one DRAM)
   for each weights mode, and whether it fits each Orin module's memory left to applications;
2. decode on paper: tokens/s = bandwidth / bytes read per token (every weight but an untied
   token embedding, plus the KV cache of every earlier position) at positions 256 and N, at the
   module's full bandwidth (a ceiling), beside NVIDIA's published TensorRT Edge-LLM speeds.

Usage (repository root, a CUDA build in build/): bench/jetson_table.py > /tmp/jetson_table.md
"""
import argparse
import json
import subprocess
import sys

GIB = 1024.0 ** 3

SHAPES = [  # synthetic shape (tools/gpt/synthetic.cpp), the name printed
    ("llama-3.2-1b", "Llama-3.2-1B"),
    ("qwen3-1.7b-shape", "Qwen3-1.7B (shape)"),
    ("llama-3.2-3b", "Llama-3.2-3B"),
    ("llama-2-7b", "Llama-2-7B"),
    ("mistral-7b", "Mistral-7B"),
]
DTYPES = ["f16", "q8", "q4"]

# Orin modules: name, memory (GB as sold), memory an application can use (GiB, assumed:
# MemTotal as JetPack 6 reports it, less ~1 GiB for a headless system and the CUDA context),
# DRAM bandwidth GB/s (the figures, NVIDIA's module data sheets).
MODULES = [
    ("Orin Nano 8 GB", 8, 6.2, 68.0),
    ("Orin NX 16 GB", 16, 14.0, 102.4),
    ("AGX Orin 64 GB", 64, 60.0, 204.8),
]
NANO_SUPER_GBPS = 102.0

# NVIDIA's published TensorRT Edge-LLM decode speeds (INT4, batch 1) for Qwen3-1.7B.
NVIDIA_QWEN3_17B_INT4 = {"Orin Nano 8 GB": 32.3, "Orin NX 16 GB": 52.2, "AGX Orin 64 GB": 89.5}


def plan(gpt, shape, dtype, ctx, weights):
    cmd = [gpt, "info", "--plan", "--synthetic", shape, "--dtype", dtype, "--device", "cuda", "--ctx", str(ctx),
           "--weights", weights, "--json"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode not in (0, 1):
        sys.exit("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpt", default="build/tools/gpt")
    ap.add_argument("--ctx", type=int, default=4096)
    args = ap.parse_args()
    rows = []
    for shape, name in SHAPES:
        for dtype in DTYPES:
            dev = plan(args.gpt, shape, dtype, args.ctx, "device")
            host = plan(args.gpt, shape, dtype, args.ctx, "host")
            rows.append((name, dtype, dev, host))

    print("Memory with one context of %d tokens (batch 1), GiB: weights, then the total a Jetson must hold" % args.ctx)
    print("(weights + KV cache + scratch + pinned buffers; host and device memory are one DRAM there).")
    print("Fits: the total for host weights against the memory an application can use (%s).\n"
          % ", ".join("%s %.1f GiB" % (m[0], m[2]) for m in MODULES))
    print("| model | dtype | weights | context (KV + scratch) | total, device weights | total, host weights | "
          + " | ".join(m[0] for m in MODULES) + " |")
    print("|---|---|---:|---:|---:|---:|" + "---|" * len(MODULES))
    for name, dtype, dev, host in rows:
        weights = dev["weight_device_bytes"]
        context = dev["context_host_bytes"] + dev["context_device_bytes"]
        fits = ["yes" if host["total_bytes"] / GIB <= m[2] else "no" for m in MODULES]
        print("| %s | %s | %.2f | %.2f | %.2f | %.2f | %s |" % (
            name, dtype, weights / GIB, context / GIB, dev["total_bytes"] / GIB, host["total_bytes"] / GIB,
            " | ".join(fits)))

    short = 256
    print("\nDecode on paper, tokens/s (batch 1): module bandwidth / bytes read per token (every weight but an")
    print("untied token embedding, and K and V of every earlier position), at position %d and at %d: ceilings at the" % (short, args.ctx))
    print("full bandwidth. Host and device weights read the same DRAM on a Jetson: one figure serves both modes.\n")
    mods = MODULES + [("Orin Nano 8 GB Super", 8, 0, NANO_SUPER_GBPS)]
    print("| model | dtype | GiB read per token at %d / %d | " % (short, args.ctx) + " | ".join(
        "%s (%.0f GB/s)" % (m[0], m[3]) for m in mods) + " |")
    print("|---|---|---:|" + "---:|" * len(mods))
    for name, dtype, dev, host in rows:
        at_ctx = dev["decode_bytes_per_token"]
        at_short = at_ctx - dev["kv_bytes_per_position"] * (args.ctx - short)
        speeds = ["%.0f / %.0f" % (m[3] * 1e9 / at_short, m[3] * 1e9 / at_ctx) for m in mods]
        print("| %s | %s | %.2f / %.2f | %s |" % (name, dtype, at_short / GIB, at_ctx / GIB, " | ".join(speeds)))
    print("\nNVIDIA TensorRT Edge-LLM, Qwen3-1.7B INT4, batch 1: "
          + ", ".join("%s %.1f tokens/s" % (k, v) for k, v in NVIDIA_QWEN3_17B_INT4.items()) + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main())
