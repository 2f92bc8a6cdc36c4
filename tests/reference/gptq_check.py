#!/usr/bin/env python3
"""gptq_check.py - `gpt convert` of GPTQ and AWQ checkpoints against transformers on the
dequantized weights.

A tiny Llama is built with transformers (fp32, random, norms perturbed). For each scheme this
script quantizes its seven linears a layer itself (torch, round to nearest: symmetric or with a
zero point, per group of input columns, optionally act-order groups scattered along K), packs
them with its own packer from the documented layouts (GPTQ: qweight [K/p, N] with input k in
bits (k % p) * bits of word k / p, qzeros [K/g, N/p] likewise along N, v1 storing zero - 1;
AWQ gemm: qweight [K, N/8] and qzeros [K/g, N/8] with outputs 0 2 4 6 1 3 5 7 in nibbles 0..7),
saves model.safetensors + config.json with its quantization_config, and

  1. runs `BUILD/tools/gpt convert DIR OUT.gpt [--dtype D]` (the default: exact q4 or q8);
  2. runs our engine through the public API (BUILD/tests/dump_logits, CPU or --device N) on
     a 16-token prompt;
  3. runs transformers' LlamaForCausalLM with the same linears dequantized, (code - zero) *
     scale, and compares: max |ours - hf| / max |hf| over all logits <= the scheme's tolerance.

The embedding and head are drawn on a grid (power-of-two step, a +-7 or +-127 step in every
group) that our round-to-nearest q4 / q8 holds exactly, so a q4/q8 output differs from
transformers only by arithmetic order: the exact repacks are held to 1e-4 on the CPU. On CUDA
a q4/q8 model computes with f16 activations (the weights are dequantized into f16 GEMMs and
GEMVs), so its tolerance there is at least 2e-3, the f16 rounding of a few layers.

Prints one PASS/FAIL line per scheme with the max rel err; exits 1 on any failure.

    python3 tests/reference/gptq_check.py build /tmp/gptq_check [--device 0]

Needs torch, transformers and safetensors; BUILD holds tools/gpt and tests/dump_logits
(`ninja -C build tools/gpt tests/dump_logits`). Runs in well under a minute.
"""

import argparse
import json
import os
import struct
import subprocess
import sys

import torch
import transformers
from safetensors.torch import save_file

PROMPT_LEN = 16
LINEARS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
AWQ_PACK = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble i holds output 8c + AWQ_PACK[i]

# name, method, bits, group, sym, v1, act_order, --dtype (None: default), grid of the embedding, tolerance
SCHEMES = [
    ("gptq-v1-sym4-g128", "gptq", 4, 128, True, True, False, None, 7, 1e-4),
    ("gptq-v2-sym4-g32", "gptq", 4, 32, True, False, False, None, 7, 1e-4),
    ("gptq-v2-asym4-g32", "gptq", 4, 32, False, False, False, None, 127, 1e-4),
    ("gptq-v1-sym8-g64", "gptq", 8, 64, True, True, False, None, 127, 1e-4),
    ("gptq-actorder-g32-f32", "gptq", 4, 32, True, True, True, "f32", 7, 1e-4),
    ("gptq-actorder-g32-f16", "gptq", 4, 32, True, True, True, None, 7, 2e-2),
    ("awq-g32", "awq", 4, 32, False, False, False, None, 127, 1e-4),
    ("awq-g128", "awq", 4, 128, False, False, False, None, 127, 1e-4),
    ("gptq-asym4-g32-requant-q4", "gptq", 4, 32, False, False, False, "q4", 7, 0.25),
]


def quantize(w, bits, group, sym, v1, act_order, gen):
    """w [N, K] -> codes [N, K], zeros [G, N], scales [G, N] (f16), g_idx [K], dequantized [N, K]."""
    n, k = w.shape
    levels = 1 << bits
    g_idx = torch.arange(k) // group
    if act_order:
        g_idx = g_idx[torch.randperm(k, generator=gen)]
    ng = k // group
    scales = torch.empty(ng, n)
    zeros = torch.empty(ng, n, dtype=torch.int64)
    for j in range(ng):
        cols = w[:, g_idx == j]
        if sym:
            s = cols.abs().amax(1) / (levels // 2 - 1)
            z = torch.full((n,), levels // 2, dtype=torch.int64)
        else:
            lo, hi = cols.amin(1).clamp(max=0), cols.amax(1).clamp(min=0)
            s = (hi - lo) / (levels - 1)
            z = torch.round(-lo / s).to(torch.int64).clamp(1 if v1 else 0, levels - 1)
        scales[j] = s.half().float()
        zeros[j] = z
    s_full, z_full = scales[g_idx].T, zeros[g_idx].T  # [N, K]
    codes = (torch.round(w / s_full).to(torch.int64) + z_full).clamp(0, levels - 1)
    deq = (codes - z_full).double() * s_full.double()
    return codes, zeros, scales.half(), g_idx.to(torch.int32), deq.float()


def to_i32(x):
    x = x & 0xFFFFFFFF
    return torch.where(x >= 2**31, x - 2**32, x).to(torch.int32)


def pack_gptq(codes, zeros, bits, v1):
    n, k = codes.shape
    p = 32 // bits
    ct = codes.T.reshape(k // p, p, n)
    qweight = sum(ct[:, e, :] << (bits * e) for e in range(p))
    zs = (zeros - (1 if v1 else 0)).reshape(zeros.shape[0], n // p, p)
    qzeros = sum(zs[:, :, e] << (bits * e) for e in range(p))
    return to_i32(qweight), to_i32(qzeros)


def pack_awq(codes, zeros):
    n, k = codes.shape
    ct = codes.T.reshape(k, n // 8, 8)
    zs = zeros.reshape(zeros.shape[0], n // 8, 8)
    qweight = sum(ct[:, :, AWQ_PACK[i]] << (4 * i) for i in range(8))
    qzeros = sum(zs[:, :, AWQ_PACK[i]] << (4 * i) for i in range(8))
    return to_i32(qweight), to_i32(qzeros)


def grid(shape, group, qmax, gen):
    """Values c * 2^-e, |c| <= qmax, with a +-qmax in every group: our q4 (qmax 7) or q8 (127) holds them exactly."""
    step = 2.0 ** (-4 if qmax == 7 else -8)
    c = torch.randint(-qmax, qmax + 1, shape, generator=gen)
    c[:, ::group] = qmax
    return (c.float() * step)


def build(seed):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=320, hidden_size=128, intermediate_size=384, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   rms_norm_eps=1e-5, tie_word_embeddings=False, attn_implementation="eager")
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_((1 + 0.1 * torch.randn_like(p)).half().float())
    return model


def run(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{what} exited {r.returncode}: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def check(scheme, args, seed):
    name, method, bits, group, sym, v1, act_order, dtype, qmax, tol = scheme
    gen = torch.Generator().manual_seed(seed)
    model = build(seed)
    cfg = model.config
    tensors = {}
    with torch.no_grad():
        for emb in ("model.embed_tokens.weight", "lm_head.weight"):
            p = model.get_parameter(emb)
            p.copy_(grid(p.shape, group, qmax, gen))
        for name_p, p in model.named_parameters():
            tensors[name_p] = p.detach().half()
        for i in range(cfg.num_hidden_layers):
            for lin in LINEARS:
                base = f"model.layers.{i}.{lin}"
                w = model.get_parameter(base + ".weight")
                codes, zeros, scales, g_idx, deq = quantize(w.detach().float(), bits, group, sym, v1, act_order, gen)
                w.copy_(deq)
                del tensors[base + ".weight"]
                if method == "gptq":
                    qw, qz = pack_gptq(codes, zeros, bits, v1)
                    tensors[base + ".g_idx"] = g_idx
                else:
                    qw, qz = pack_awq(codes, zeros)
                tensors[base + ".qweight"], tensors[base + ".qzeros"], tensors[base + ".scales"] = qw, qz, scales
    d = os.path.join(args.out_dir, name)
    os.makedirs(d, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(d, "model.safetensors"))
    cfg.save_pretrained(d)  # config.json as transformers writes it, then its quantization_config added
    with open(os.path.join(d, "config.json")) as f:
        conf = json.load(f)
    if method == "gptq":
        conf["quantization_config"] = {"quant_method": "gptq", "bits": bits, "group_size": group, "sym": sym,
                                       "desc_act": act_order, "checkpoint_format": "gptq" if v1 else "gptq_v2"}
    else:
        conf["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True,
                                       "version": "gemm"}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(conf, f)

    out = os.path.join(args.out_dir, name + ".gpt")
    cmd = [args.gpt, "convert", d, out, "--force", "--no-progress"] + (["--dtype", dtype] if dtype else [])
    summary = run(cmd, "gpt convert").stdout.strip().splitlines()
    imported = next((l.strip() for l in summary if l.startswith("imported") or l.startswith("quantized")), "")

    prompt = [int(x) for x in torch.randint(0, cfg.vocab_size, (PROMPT_LEN,), generator=gen)]
    ref = model(torch.tensor([prompt]), use_cache=False).logits[0].double()
    logits = os.path.join(args.out_dir, name + ".logits.f32")
    run([args.dump_logits, "--device", args.device, "logits", out, logits] + [str(t) for t in prompt], "dump_logits")
    with open(logits, "rb") as f:
        data = f.read()
    ours = torch.tensor(struct.unpack(f"<{len(data) // 4}f", data), dtype=torch.float64).reshape(ref.shape)
    rel = float((ours - ref).abs().max() / ref.abs().max())
    if args.device != "cpu" and dtype != "f32":  # f16 activations on CUDA (see the top)
        tol = max(tol, 2e-3)
    ok = rel <= tol and bool(torch.isfinite(ours).all())
    return ok, rel, imported, tol


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--device", default="cpu", help="our engine's device: cpu (default) or a CUDA ordinal")
    args = ap.parse_args()
    args.gpt = os.path.join(args.build_dir, "tools", "gpt")
    args.dump_logits = os.path.join(args.build_dir, "tests", "dump_logits")
    for p in (args.gpt, args.dump_logits):
        if not os.access(p, os.X_OK):
            print(f"gptq_check: {p} is missing or not executable (build first)", file=sys.stderr)
            return 2
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_grad_enabled(False)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; our engine on {args.device}")
    failures = 0
    for i, s in enumerate(SCHEMES):
        try:
            ok, rel, imported, tol = check(s, args, 2000 + i)
        except Exception as e:  # report and go on
            ok, rel, imported, tol = False, float("nan"), f"ERROR: {e}", s[-1]
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {s[0]:<28} max rel err {rel:.3e} (tolerance {tol:g})  {imported}", flush=True)
    print(f"{len(SCHEMES) - failures}/{len(SCHEMES)} schemes match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
