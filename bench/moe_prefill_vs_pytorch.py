#!/usr/bin/env python3
"""moe_prefill_vs_pytorch.py - one MoE shape's prefill, PyTorch eager against libgpt, in one run
(issue 19's "prefill 512 of the OLMoE shape at least 3x PyTorch eager"), in about a minute on
an H200. The full comparison (decode, graphed PyTorch, every MoE shape) is
`compare_pytorch.py --moe-only`; this is its prefill part alone, with the same model builder
and timing (CUDA events, warm-up, median).

    python3 bench/moe_prefill_vs_pytorch.py --gpt build/tools/gpt [--shape olmoe-1b-7b] [--tokens 512]
"""
import argparse
import gc
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_pytorch as cp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpt", default="build/tools/gpt")
    ap.add_argument("--shape", default="olmoe-1b-7b", choices=["moe-768", "olmoe-1b-7b"])
    ap.add_argument("--tokens", type=int, default=512)
    a = ap.parse_args()
    model = cp.build(a.shape, torch.float16)
    t = cp.torch_prefill(model, a.tokens, model.config.vocab_size, reps=5)
    impl = cp.experts_impl(model)
    print(f"pytorch eager prefill {a.tokens}: {t:.2f} ms (experts {impl})", flush=True)
    del model
    gc.collect()
    torch.cuda.empty_cache()  # PyTorch's copy freed before ours loads
    o = cp.ours(a.gpt, a.shape, ["--prefill", str(a.tokens), "--decode", "32", "--pos", "100", "--reps", "5"])
    ms = o["prefill"]["median_ms"]
    print(f"libgpt prefill {a.tokens}: {ms:.2f} ms -> {t / ms:.2f}x eager; decode {o['decode']['median_ms']:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
