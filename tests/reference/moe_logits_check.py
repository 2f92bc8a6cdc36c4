#!/usr/bin/env python3
"""moe_logits_check.py - mixture-of-experts models: `gpt convert` + our engine against transformers.

For each case - random tiny and odd configs of Mixtral, Qwen2-MoE, OLMoE and Qwen3-MoE: 4 to 16
experts, top-1/2/4, the shared expert (Qwen2-MoE) on and off (the other families),
norm_topk_prob both ways, dense layers mixed in (mlp_only_layers, decoder_sparse_step), Mixtral
with a sliding window shorter than the prompt, and
routers with tied rows whose tied experts are identical (a tie in the top-k then cannot change
the output, whichever expert wins it) - this script

  1. builds the model with transformers (fp32, eager attention), perturbs every parameter
     (norm weights around 1, biases non-zero, routers spread so that the top-k is decisive)
     and saves it with save_pretrained (safetensors, fp32): transformers 5 writes the
     checkpoints' per-expert modules by default and, for every other case here, its fused
     runtime tensors (save_original_format=False); each line says which layout was read;
  2. runs `BUILD/tools/gpt convert DIR OUT.gpt --dtype f32 --force`;
  3. for each device (default: cpu and CUDA device 0) runs our engine through the public API
     (BUILD/tests/dump_logits): the logits of every position of a 16-token prompt, and 64
     greedy tokens;
  4. compares: max |ours - hf| / max |hf| <= 1e-4 over all logits, and the greedy tokens
     identical to transformers' (argmax of fp32 logits, EOS ignored; a divergence where
     transformers' own top two logits are closer than 1e-5 x max|logit| is a near tie and
     reported, not failed).

One PASS/FAIL line per case and device, with the numbers; exit status 1 on any failure, 2 on a
usage error. Run from the project root on the GPU machine after a CUDA build:

    python3 tests/reference/moe_logits_check.py BUILD_DIR /tmp/moe_check             # cpu and cuda:0
    python3 tests/reference/moe_logits_check.py BUILD_DIR /tmp/moe_check --devices cpu

BUILD_DIR holds tools/gpt and tests/dump_logits (see hf_logits_check.py for the nlohmann/json
note). --only NAME runs the cases whose name contains NAME; --tokens N the greedy length.
"""

import argparse
import inspect
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    import transformers
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"moe_logits_check: needs torch and transformers ({e})", file=sys.stderr)
    sys.exit(2)

from hf_logits_check import hf_greedy, hf_logits, read_f32, read_i32, run, set_rope_theta  # noqa: E402

LOGIT_TOL = 1e-4
TIE_TOL = 1e-5
PROMPT_LEN = 16

FAMILIES = {
    "mixtral": ("MixtralConfig", "MixtralForCausalLM"),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM"),
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM"),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM"),
}


def _attn(hidden, heads, kv, head_dim=None):
    d = dict(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=128)
    if head_dim:
        d["head_dim"] = head_dim
    return d


# name -> (family, config kwargs, rope_theta, tie the router: pairs (0, 1) and (2, 3) share a row and an expert)
CASES = [
    ("mixtral-e8-top2-256", "mixtral",
     dict(**_attn(256, 4, 2), num_hidden_layers=2, intermediate_size=384, num_local_experts=8, num_experts_per_tok=2,
          vocab_size=1001, tie_word_embeddings=False, sliding_window=None), 1000000.0, False),
    ("mixtral-e4-top1-200-5q1kv-tied", "mixtral",
     dict(**_attn(200, 5, 1), num_hidden_layers=3, intermediate_size=328, num_local_experts=4, num_experts_per_tok=1,
          vocab_size=997, tie_word_embeddings=True, sliding_window=None), 10000.0, False),
    ("mixtral-e16-top4-192", "mixtral",
     dict(**_attn(192, 3, 3), num_hidden_layers=2, intermediate_size=160, num_local_experts=16, num_experts_per_tok=4,
          vocab_size=1009, tie_word_embeddings=False, sliding_window=None), 10000.0, False),
    ("mixtral-e4-top2-window12", "mixtral",
     dict(**_attn(160, 5, 5), num_hidden_layers=2, intermediate_size=224, num_local_experts=4, num_experts_per_tok=2,
          vocab_size=1011, tie_word_embeddings=False, sliding_window=12), 10000.0, False),
    ("mixtral-e4-top2-tied-router", "mixtral",
     dict(**_attn(128, 2, 1), num_hidden_layers=2, intermediate_size=200, num_local_experts=4, num_experts_per_tok=2,
          vocab_size=1003, tie_word_embeddings=False, sliding_window=None), 10000.0, True),
    ("qwen2moe-e8-top2-shared", "qwen2_moe",
     dict(**_attn(256, 4, 2), num_hidden_layers=2, intermediate_size=512, moe_intermediate_size=96,
          shared_expert_intermediate_size=256, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
          vocab_size=1013, tie_word_embeddings=False), 1000000.0, False),
    ("qwen2moe-e12-top4-norm-sparse2", "qwen2_moe",
     dict(**_attn(192, 6, 2), num_hidden_layers=4, intermediate_size=320, moe_intermediate_size=72,
          shared_expert_intermediate_size=136, num_experts=12, num_experts_per_tok=4, norm_topk_prob=True,
          decoder_sparse_step=2, mlp_only_layers=[3], vocab_size=1007, tie_word_embeddings=True), 10000.0, False),
    ("olmoe-e16-top4-256", "olmoe",
     dict(**_attn(256, 4, 4), num_hidden_layers=2, intermediate_size=128, num_experts=16, num_experts_per_tok=4,
          norm_topk_prob=False, vocab_size=1019, tie_word_embeddings=False), 10000.0, False),
    ("olmoe-e8-top2-gqa-norm", "olmoe",
     dict(**_attn(192, 6, 2), num_hidden_layers=3, intermediate_size=104, num_experts=8, num_experts_per_tok=2,
          norm_topk_prob=True, vocab_size=1003, tie_word_embeddings=False), 10000.0, False),
    ("olmoe-e4-top2-tied-router", "olmoe",
     dict(**_attn(128, 2, 2), num_hidden_layers=2, intermediate_size=96, num_experts=4, num_experts_per_tok=2,
          norm_topk_prob=False, vocab_size=1001, tie_word_embeddings=False), 10000.0, True),
    ("qwen3moe-e8-top2-hd80-norm", "qwen3_moe",
     dict(**_attn(256, 4, 2, 80), num_hidden_layers=2, intermediate_size=512, moe_intermediate_size=112, num_experts=8,
          num_experts_per_tok=2, norm_topk_prob=True, vocab_size=1009, tie_word_embeddings=False), 1000000.0, False),
    ("qwen3moe-e6-top1-dense-layer1", "qwen3_moe",
     dict(**_attn(160, 5, 1, 32), num_hidden_layers=3, intermediate_size=288, moe_intermediate_size=64, num_experts=6,
          num_experts_per_tok=1, norm_topk_prob=False, mlp_only_layers=[1], vocab_size=997, tie_word_embeddings=True),
     1000000.0, False),
    ("qwen3moe-e4-top4-all-tied-router", "qwen3_moe",
     dict(**_attn(128, 2, 1, 64), num_hidden_layers=2, intermediate_size=256, moe_intermediate_size=80, num_experts=4,
          num_experts_per_tok=4, norm_topk_prob=False, vocab_size=1005, tie_word_embeddings=False), 10000.0, True),
]


def tie_router(model):
    """Experts 1 and 3 become copies of 0 and 2, router rows included, in every MoE layer."""
    params = dict(model.named_parameters())
    tied = 0
    for name, p in params.items():
        if name.endswith(".gate.weight") and ("block_sparse_moe." in name or ".mlp.gate." in name) and p.dim() == 2:
            p[1].copy_(p[0])
            p[3].copy_(p[2])
            tied += 1
        elif name.endswith("experts.gate_up_proj") or name.endswith("experts.down_proj"):  # fused [E, ...]
            p[1].copy_(p[0])
            p[3].copy_(p[2])
        elif ".experts.1." in name or ".experts.3." in name:  # one module per expert
            src = name.replace(".experts.1.", ".experts.0.").replace(".experts.3.", ".experts.2.")
            p.copy_(params[src])
    if not tied:
        raise RuntimeError("no router found to tie")


def build(family, kwargs, theta, tie, seed):
    if not all(hasattr(transformers, c) for c in FAMILIES[family]):
        raise RuntimeError(f"transformers {transformers.__version__} has no {FAMILIES[family][1]}")
    cfg_cls, model_cls = (getattr(transformers, c) for c in FAMILIES[family])
    cfg = cfg_cls(**kwargs, rope_theta=theta, attn_implementation="eager")
    cfg.hidden_act = "silu"
    cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = 1, 2, 0
    set_rope_theta(cfg, theta)
    torch.manual_seed(seed)
    model = model_cls(cfg).to(torch.float32).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # norm scales around 1, biases around 0
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            elif name.endswith(".gate.weight") and p.shape[0] == (getattr(cfg, "num_local_experts", None) or cfg.num_experts):
                # a router: logits of a few units, so that the top-k is far from float-noise ties
                p.copy_(3.0 * torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
            else:  # [out, in] matrices and fused [E, out, in] stacks
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
        if tie:
            tie_router(model)
    if getattr(cfg, "tie_word_embeddings", False):
        model.tie_weights()
    return model


def saved_layout(d):
    """'fused' or 'per-expert': how save_pretrained wrote the experts."""
    from safetensors import safe_open
    names = []
    for f in os.listdir(d):
        if f.endswith(".safetensors"):
            with safe_open(os.path.join(d, f), "pt") as st:
                names += list(st.keys())
    if any(n.endswith("experts.gate_up_proj") for n in names):
        return "fused"
    if any(".experts.0." in n for n in names):
        return "per-expert"
    return "no experts?"


def compare_greedy(ours, want, steps):
    if ours == want:
        return "identical", True
    if len(ours) != len(want):
        return f"{len(ours)} tokens, expected {len(want)}", False
    i = next(k for k in range(len(want)) if ours[k] != want[k])
    row = steps[i]
    gap = float(row[want[i]] - row[ours[i]])
    if gap <= TIE_TOL * float(row.abs().max()):
        return f"near tie at {i} (gap {gap:.1e})", True
    return f"differs at {i}: {ours[i]} vs {want[i]} (gap {gap:.1e})", False


def check_case(idx, name, family, kwargs, theta, tie, args):
    seed = 2000 + idx
    model = build(family, kwargs, theta, tie, seed)
    d = os.path.join(args.out_dir, name)
    gpt_file = d + ".gpt"
    # transformers 5 saves the checkpoints' per-expert layout by default (its reverse weight
    # conversion); every other case keeps its fused runtime layout, so both are converted.
    save_kw = {}
    if idx % 2 and "save_original_format" in inspect.signature(model.save_pretrained).parameters:
        save_kw["save_original_format"] = False
    model.save_pretrained(d, safe_serialization=True, **save_kw)
    layout = saved_layout(d)
    t0 = time.time()
    run([args.gpt, "convert", d, gpt_file, "--dtype", "f32", "--force", "--quiet", "--no-progress"], "gpt convert")
    conv_s = time.time() - t0

    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(seed + 1)
    prompt = [int(x) for x in torch.randint(3, vocab, (PROMPT_LEN,), generator=g)]
    ref = hf_logits(model, prompt)
    want, steps = hf_greedy(model, prompt, args.tokens)
    lines, ok_all = [], True
    for dev in args.devices:
        tag = "cpu" if dev == "cpu" else f"cuda:{dev}"
        out_logits = f"{d}.{tag.replace(':', '')}.logits.f32"
        out_ids = f"{d}.{tag.replace(':', '')}.ids.i32"
        try:
            run([args.dump_logits, "--device", dev, "logits", gpt_file, out_logits] + [str(t) for t in prompt], "dump_logits logits")
            ours = read_f32(out_logits, (PROMPT_LEN, vocab))
            rel = float((ours - ref).abs().max()) / float(ref.abs().max())
            logits_ok = rel <= LOGIT_TOL and bool(torch.isfinite(ours).all())
            run([args.dump_logits, "--device", dev, "generate", gpt_file, out_ids, str(args.tokens)] + [str(t) for t in prompt],
                "dump_logits generate")
            greedy, greedy_ok = compare_greedy(read_i32(out_ids), want, steps)
        except Exception as e:  # report and go on
            rel, logits_ok, greedy, greedy_ok = float("nan"), False, f"ERROR: {str(e).strip()[:300]}", False
        ok = logits_ok and greedy_ok
        ok_all = ok_all and ok
        lines.append(f"{'PASS' if ok else 'FAIL'} {name:<34} {tag:<6} max rel err {rel:.2e} (limit {LOGIT_TOL:g}), "
                     f"greedy {args.tokens}: {greedy}; {layout} experts, convert {conv_s:.2f} s")
    return lines, ok_all


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--only", default="")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--devices", default="cpu,0", help="comma-separated: cpu and/or CUDA ordinals (default cpu,0)")
    args = ap.parse_args()
    args.devices = [x.strip() for x in args.devices.split(",") if x.strip()]
    args.gpt = os.path.join(args.build_dir, "tools", "gpt")
    args.dump_logits = os.path.join(args.build_dir, "tests", "dump_logits")
    for p in (args.gpt, args.dump_logits):
        if not os.access(p, os.X_OK):
            print(f"moe_logits_check: {p} is missing or not executable (build first)", file=sys.stderr)
            return 2
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_grad_enabled(False)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; devices {','.join(args.devices)}; "
          f"{PROMPT_LEN}-token prompt, {args.tokens} greedy tokens", flush=True)
    t0 = time.time()
    n, failed = 0, 0
    for i, (name, family, kwargs, theta, tie) in enumerate(CASES):
        if args.only and args.only not in name:
            continue
        n += 1
        try:
            lines, ok = check_case(i, name, family, kwargs, theta, tie, args)
        except Exception as e:
            lines, ok = [f"FAIL {name:<34} ERROR: {str(e).strip()[:500]}"], False
        failed += not ok
        for line in lines:
            print(line, flush=True)
    print(f"{n - failed}/{n} cases pass on every device ({time.time() - t0:.0f} s)")
    return 1 if failed or not n else 0


if __name__ == "__main__":
    sys.exit(main())
