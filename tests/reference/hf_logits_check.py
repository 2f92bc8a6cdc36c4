#!/usr/bin/env python3
"""hf_logits_check.py - `gpt convert` + our engine against Hugging Face transformers.

For each of a set of small, randomly initialised models (gpt2 tied and untied; llama with
MHA, GQA and a single kv head; head_dim 64 and 128, also a head_dim that is not
hidden/heads; mistral, also with a sliding window; qwen2 with q/k/v biases, also with
use_sliding_window; gemma2 and gemma3 text (soft-caps, query_pre_attn_scalar, windowed
layers, q/k norms, local and linearly scaled RoPE); widths that are not powers of two;
vocabularies that are not multiples of 64) this script

  1. builds the model with transformers (fp32, eager attention), perturbs every parameter
     (norm weights around 1, non-zero biases) and saves it with save_pretrained
     (safetensors, fp32) - no tokenizer, no network;
  2. runs `BUILD/tools/gpt convert DIR OUT.gpt --dtype f32 --force`;
  3. runs our engine on the CPU through the public API (BUILD/tests/dump_logits):
     the logits of every position of a fixed 16-token prompt, and 64 greedy tokens;
  4. compares: max |ours - hf| / max |hf| over all logits must be <= 1e-4, and the greedy
     tokens must be identical to transformers' greedy decode (argmax of the fp32 logits,
     EOS ignored). A divergence where transformers' own top two logits are closer than
     1e-5 x max|logit| is reported as a near tie and not counted as a failure.

It prints a results table and exits 1 on any mismatch or failed conversion (2 on a usage
error).

Run it from the project root on a machine with Python 3, torch, transformers and
safetensors (the GPU machine has them; everything here runs on the CPU), after building:

    meson setup build -Dcuda=disabled && ninja -C build      # or an existing CUDA build dir
    python3 tests/reference/hf_logits_check.py build /tmp/hf_check

`gpt convert` needs nlohmann/json (header-only) at configure time; without it meson builds
a stub and this script stops at the first conversion. Where the headers are missing (the
GPU machine lists none), fetch the package on a development machine
(`apt-get download nlohmann-json3-dev` into .device/debs, which .device/setup.sh unpacks
into /tmp/devpfx) and configure with `-Dcpp_args=-I/tmp/devpfx/usr/include`.

--device 0 runs our side on CUDA device 0 instead of the CPU (passed on as dump_logits
--device); --only gemma (or window, llama3, qwen3, phi) runs just those entries.

Arguments: BUILD_DIR (holds tools/gpt and tests/dump_logits) and OUT_DIR (scratch space
for the saved models and converted files; created if missing). Options: --only NAME
(run the models whose name contains NAME), --gpt PATH and --dump-logits PATH to override
the binaries, --tokens N for the greedy length (default 64), --device cpu|N for our engine
(default cpu; N: a CUDA ordinal).

Also Llama 3.x RoPE scaling (llama3, linear), Qwen3 (q/k norms, head_dim 80 and 128 apart from
hidden / heads) and Phi-3 / Phi-4-mini (fused tensors, longrope in its short and its long regime,
partial rotation 0.75 of head_dim 96, a sliding window of 11 under an 80-token sequence); the
RoPE frequencies transformers runs are checked against the formulas first.
"""

import argparse
import math
import os
import struct
import subprocess
import sys
import time

try:
    import torch
    import transformers
    from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, MistralConfig,
                              MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM)
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"hf_logits_check: needs torch and transformers ({e})", file=sys.stderr)
    sys.exit(2)

LOGIT_TOL = 1e-4
TIE_TOL = 1e-5
PROMPT_LEN = 16

# name -> (family, config kwargs, rope_theta or None)
MODELS = [
    ("gpt2-tied-192x3", "gpt2", dict(n_embd=192, n_layer=2, n_head=3, n_positions=128, vocab_size=1000), None),
    ("gpt2-untied-320x5", "gpt2",
     dict(n_embd=320, n_layer=3, n_head=5, n_positions=128, vocab_size=1019, n_inner=832, tie_word_embeddings=False), None),
    ("llama-mha-320x5", "llama",
     dict(hidden_size=320, num_hidden_layers=2, num_attention_heads=5, num_key_value_heads=5, intermediate_size=864,
          vocab_size=1001, max_position_embeddings=128, tie_word_embeddings=False), 10000.0),
    ("llama-gqa-384-6q2kv", "llama",
     dict(hidden_size=384, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2, intermediate_size=1000,
          vocab_size=999, max_position_embeddings=128, tie_word_embeddings=False), 500000.0),
    ("llama-1kv-hd128-tied", "llama",
     dict(hidden_size=384, num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=1, intermediate_size=768,
          vocab_size=1003, max_position_embeddings=128, tie_word_embeddings=True), 10000.0),
    ("llama-hd128-q512-hidden320", "llama",
     dict(hidden_size=320, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=128,
          intermediate_size=640, vocab_size=1009, max_position_embeddings=128, tie_word_embeddings=False), 10000.0),
    ("mistral-320-5q1kv", "mistral",
     dict(hidden_size=320, num_hidden_layers=2, num_attention_heads=5, num_key_value_heads=1, head_dim=64,
          intermediate_size=896, vocab_size=1005, max_position_embeddings=128, sliding_window=4096,
          tie_word_embeddings=False), 10000.0),
    ("qwen2-448-7q1kv-tied", "qwen2",
     dict(hidden_size=448, num_hidden_layers=2, num_attention_heads=7, num_key_value_heads=1, intermediate_size=1216,
          vocab_size=1013, max_position_embeddings=128, tie_word_embeddings=True), 1000000.0),
    ("qwen2-256-hd128-untied", "qwen2",
     dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, intermediate_size=704,
          vocab_size=997, max_position_embeddings=128, tie_word_embeddings=False), 10000.0),
]

CLASSES = {
    "gpt2": (GPT2Config, GPT2LMHeadModel),
    "llama": (LlamaConfig, LlamaForCausalLM),
    "mistral": (MistralConfig, MistralForCausalLM),
    "qwen2": (Qwen2Config, Qwen2ForCausalLM),
}

# ---- Llama 3.x RoPE scaling, Qwen3, Phi-3 / Phi-4-mini (issue #18). Scaled models carry their
# RoPE settings in the config kwargs; check_scaled_rope() verifies that this transformers runs the
# frequencies the formulas give before the logits are compared. Longrope switches factors by
# sequence length in transformers (per forward call) and by context length here (per context):
# each case stays in one regime for the prompt and all 64 greedy tokens (positions < 80), with
# original_max_position_embeddings 128 (short factors throughout) or 8 (long factors throughout).
for _family, _cfg, _cls in (("qwen3", "Qwen3Config", "Qwen3ForCausalLM"), ("phi3", "Phi3Config", "Phi3ForCausalLM")):
    if hasattr(transformers, _cfg):
        CLASSES[_family] = (getattr(transformers, _cfg), getattr(transformers, _cls))


def _factors(n, a, b):
    return [round(a + b * i, 6) for i in range(n)]


LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 64}
MODELS += [
    # head_dim 64, theta 500000: frequencies 0-2 kept, 3-5 blended, the rest divided by 8.
    ("llama3-scaled-384-6q2kv-tied", "llama",
     dict(hidden_size=384, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2, intermediate_size=1000,
          vocab_size=1003, max_position_embeddings=256, tie_word_embeddings=True, rope_scaling=dict(LLAMA3_SCALING)),
     500000.0),
    ("llama-linear4-320x5", "llama",
     dict(hidden_size=320, num_hidden_layers=2, num_attention_heads=5, num_key_value_heads=5, intermediate_size=864,
          vocab_size=1001, max_position_embeddings=256, tie_word_embeddings=False,
          rope_scaling={"rope_type": "linear", "factor": 4.0}), 10000.0),
    ("qwen3-320-6q2kv-hd80", "qwen3",
     dict(hidden_size=320, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2, head_dim=80,
          intermediate_size=704, vocab_size=1007, max_position_embeddings=128, tie_word_embeddings=False), 1000000.0),
    ("qwen3-256-4q1kv-hd128-tied", "qwen3",
     dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=128,
          intermediate_size=640, vocab_size=999, max_position_embeddings=128, tie_word_embeddings=True), 1000000.0),
    # Phi-3-mini-like: head_dim 80, full rotation, longrope short factors, a sliding window of 11.
    ("phi3-480x6-longrope-short-win11", "phi3",
     dict(hidden_size=480, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=6, intermediate_size=1000,
          vocab_size=1019, max_position_embeddings=512, original_max_position_embeddings=128, sliding_window=11,
          tie_word_embeddings=False,
          rope_scaling={"type": "longrope", "short_factor": _factors(40, 1.0, 0.02), "long_factor": _factors(40, 1.0, 0.3)}),
     10000.0),
    # Phi-4-mini-like: head_dim 96 with 3/4 rotating, GQA, tied, longrope long factors.
    ("phi4-384-4q2kv-partial-long", "phi3",
     dict(hidden_size=384, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=768,
          vocab_size=1009, max_position_embeddings=512, original_max_position_embeddings=8, partial_rotary_factor=0.75,
          sliding_window=None, tie_word_embeddings=True,
          rope_scaling={"type": "longrope", "short_factor": _factors(36, 1.0, 0.05), "long_factor": _factors(36, 1.5, 0.4)}),
     10000.0),
]


def expected_rope(kwargs, theta, seq_len):
    """inv_freq and the cos/sin factor from the formulas of modeling_rope_utils.py, in float64."""
    hd = kwargs.get("head_dim") or kwargs["hidden_size"] // kwargs["num_attention_heads"]
    dim = int(hd * kwargs.get("partial_rotary_factor", 1.0))
    inv = [theta ** (-2.0 * i / dim) for i in range(dim // 2)]
    sc = kwargs.get("rope_scaling") or {}
    kind = sc.get("rope_type", sc.get("type", "default"))
    att = 1.0
    if kind == "linear":
        inv = [f / sc["factor"] for f in inv]
    elif kind == "llama3":
        ctx, lo, hi, fac = (sc["original_max_position_embeddings"], sc["low_freq_factor"], sc["high_freq_factor"],
                            sc["factor"])
        out = []
        for f in inv:
            wl = 2 * math.pi / f
            if wl > ctx / lo:
                f = f / fac
            elif not wl < ctx / hi:
                s_ = (ctx / wl - lo) / (hi - lo)
                f = (1 - s_) * f / fac + s_ * f
            out.append(f)
        inv = out
    elif kind == "longrope":
        orig = kwargs["original_max_position_embeddings"]
        ext = sc["long_factor"] if seq_len > orig else sc["short_factor"]
        inv = [f / e for f, e in zip(inv, ext)]
        factor = kwargs["max_position_embeddings"] / orig
        att = math.sqrt(1 + math.log(factor) / math.log(orig)) if factor > 1 else 1.0
    return torch.tensor(inv, dtype=torch.float64), att


def check_scaled_rope(model, kwargs, theta):
    """Fails when this transformers runs other frequencies than the formulas (at seq_len 16 and 80)."""
    emb = model.model.rotary_emb
    for seq_len in (PROMPT_LEN, PROMPT_LEN + 64):
        emb(torch.zeros(1, dtype=torch.float32), torch.arange(seq_len)[None])
        want, att = expected_rope(kwargs, theta, seq_len)
        got = emb.inv_freq.double()
        if got.shape != want.shape or float(((got - want).abs() / want).max()) > 1e-6:
            raise RuntimeError(f"transformers {transformers.__version__} runs other RoPE frequencies than the formulas at "
                               f"sequence length {seq_len}: {got[:4].tolist()} vs {want[:4].tolist()}")
        if abs(float(getattr(emb, "attention_scaling", 1.0)) - att) > 1e-6:
            raise RuntimeError(f"attention factor {getattr(emb, 'attention_scaling', None)}, the formula gives {att}")


# ---- sliding windows, Gemma-2 and Gemma-3 (issue #18). Windows are shorter than the
# 16-token prompt, and far shorter than prompt + 64 greedy tokens, so they bind in both
# checks. Each entry: (name, family, config kwargs, rope_theta or None). Gemma's RoPE goes
# in kwargs["rope"] (theta, local_theta, linear factor), set by set_gemma_rope in whichever
# spelling this transformers uses and checked against the model's inv_freq buffers.
try:  # Gemma-3 text needs transformers >= 4.50
    from transformers import Gemma2Config, Gemma2ForCausalLM
    CLASSES["gemma2"] = (Gemma2Config, Gemma2ForCausalLM)
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    CLASSES["gemma3"] = (Gemma3TextConfig, Gemma3ForCausalLM)
except ImportError:
    pass

def gemma3_layer_types(n, pattern):
    """Both spellings are passed: sliding_window_pattern (transformers < 4.53) and layer_types."""
    return ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n)]


MODELS += [
    # Mistral with a real window: every layer sees only the last 12 keys.
    ("mistral-window12-256-4q2kv", "mistral",
     dict(hidden_size=256, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
          intermediate_size=704, vocab_size=1011, max_position_embeddings=128, sliding_window=12,
          tie_word_embeddings=False), 10000.0),
    # Qwen2 with use_sliding_window: layers >= max_window_layers (1) windowed (transformers >= 4.53 applies it in eager).
    ("qwen2-window9-maxwin1-192", "qwen2",
     dict(hidden_size=192, num_hidden_layers=3, num_attention_heads=3, num_key_value_heads=1, intermediate_size=512,
          vocab_size=1007, max_position_embeddings=128, use_sliding_window=True, sliding_window=9, max_window_layers=1,
          tie_word_embeddings=False), 1000000.0),
    # Gemma-2 with its real defaults (soft-caps 50 / 30, query_pre_attn_scalar 256), window 10 on even layers.
    ("gemma2-defaults-288-hd96", "gemma2",
     dict(hidden_size=288, num_hidden_layers=3, num_attention_heads=3, num_key_value_heads=1, head_dim=96,
          intermediate_size=800, vocab_size=1021, max_position_embeddings=128, sliding_window=10,
          rope=dict(theta=10000.0)), None),
    # Gemma-2 with caps small enough to bend, a query scale unlike head_dim, odd widths.
    ("gemma2-caps-200-5q1kv-hd40", "gemma2",
     dict(hidden_size=200, num_hidden_layers=4, num_attention_heads=5, num_key_value_heads=1, head_dim=40,
          intermediate_size=536, vocab_size=1003, max_position_embeddings=128, sliding_window=7,
          attn_logit_softcapping=4.0, final_logit_softcapping=8.0, query_pre_attn_scalar=56,
          rope=dict(theta=10000.0)), None),
    # Gemma-3 text (the 1B's layout): q/k norms, pattern 3 (layers 2 and 5 global), local base
    # 10000, global base 1e6 with linear scaling 8, no soft-caps.
    ("gemma3-256-4q1kv-hd64-linear8", "gemma3",
     dict(hidden_size=256, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=1, head_dim=64,
          intermediate_size=640, vocab_size=1019, max_position_embeddings=128, sliding_window=8,
          sliding_window_pattern=3, layer_types=gemma3_layer_types(6, 3), query_pre_attn_scalar=64,
          rope=dict(theta=1000000.0, local_theta=10000.0, linear=8.0)), None),
    # Gemma-3 with a final soft-cap, unscaled RoPE, GQA 6q/2kv, head_dim 48.
    ("gemma3-192-6q2kv-hd48-cap", "gemma3",
     dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2, head_dim=48,
          intermediate_size=512, vocab_size=1009, max_position_embeddings=128, sliding_window=6,
          sliding_window_pattern=2, layer_types=gemma3_layer_types(4, 2), query_pre_attn_scalar=40,
          final_logit_softcapping=12.0,
          rope=dict(theta=10000.0, local_theta=5000.0)), None),
]


def is_gemma(family):
    return family.startswith("gemma")


def set_gemma_rope(cfg, family, rope):
    """Global theta (with linear scaling on Gemma-3), Gemma-3's local theta: rope_parameters
    keyed by layer type (transformers 5), flat, or the older top-level keys."""
    theta, local, linear = rope["theta"], rope.get("local_theta", rope["theta"]), rope.get("linear", 1.0)
    full = {"rope_type": "linear", "factor": linear} if linear != 1.0 else {"rope_type": "default"}
    full["rope_theta"] = theta
    rp = getattr(cfg, "rope_parameters", None)
    if isinstance(rp, dict) and ("full_attention" in rp or "sliding_attention" in rp):
        rp["full_attention"] = full
        rp["sliding_attention"] = {"rope_type": "default", "rope_theta": local}
    elif isinstance(rp, dict):
        rp.clear()
        rp.update(full)
    else:
        cfg.rope_theta = theta
        if family == "gemma3":
            cfg.rope_local_base_freq = local
            cfg.rope_scaling = {"rope_type": "linear", "factor": linear} if linear != 1.0 else None


def check_gemma_rope(model, family, rope, hd):
    """Every expected frequency vector is one of the model's inv_freq buffers."""
    def freqs(base, div):
        return torch.tensor([base ** (-2.0 * i / hd) / div for i in range(hd // 2)], dtype=torch.float64)
    want = [freqs(rope["theta"], rope.get("linear", 1.0))]
    if family == "gemma3":
        want.append(freqs(rope.get("local_theta", rope["theta"]), 1.0))
    have = [b.double().flatten() for n, b in model.named_buffers() if "inv_freq" in n]
    for w in want:
        if not any(h.shape == w.shape and torch.allclose(h, w, rtol=1e-6, atol=0) for h in have):
            raise RuntimeError(f"RoPE frequencies {rope} did not take effect in this transformers")


def set_rope_theta(cfg, theta):
    """rope_theta lives in rope_parameters in transformers >= 5, at the top level before."""
    rp = getattr(cfg, "rope_parameters", None)
    if isinstance(rp, dict):
        rp["rope_theta"] = theta
        rp.setdefault("rope_type", rp.get("type", "default"))
    else:
        cfg.rope_theta = theta


def build_model(family, kwargs, theta, seed):
    extra = {} if theta is None else {"rope_theta": theta}
    kwargs = dict(kwargs)
    rope = kwargs.pop("rope", None)
    if family not in CLASSES:
        raise RuntimeError(f"transformers {transformers.__version__} has no {family} classes")
    cfg_cls, model_cls = CLASSES[family]
    cfg = cfg_cls(**kwargs, **extra, attn_implementation="eager")
    if family == "phi3":
        cfg.pad_token_id = 0  # Phi3Config's default pad id (32000) is outside these vocabularies
    if family == "gpt2":
        cfg.bos_token_id = cfg.eos_token_id = kwargs["vocab_size"] - 1
    elif is_gemma(family):
        cfg.bos_token_id, cfg.eos_token_id = 2, 1  # Gemma's ids; hidden_activation stays gelu_pytorch_tanh
        set_gemma_rope(cfg, family, rope)
    else:
        cfg.hidden_act = "silu"
        cfg.bos_token_id, cfg.eos_token_id = 1, 2
        set_rope_theta(cfg, theta)
    torch.manual_seed(seed)
    model = model_cls(cfg).to(torch.float32).eval()
    if family in ("qwen3", "phi3") or "rope_scaling" in kwargs:
        check_scaled_rope(model, kwargs, theta)
    elif rope is not None:
        check_gemma_rope(model, family, rope, cfg.head_dim)
    elif theta is not None:
        # Make sure this transformers version really runs the theta we meant (and saves).
        hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        inv = model.model.rotary_emb.inv_freq.double()
        want = theta ** (-2.0 / hd)
        if abs(float(inv[1]) - want) > 1e-6 * want:
            raise RuntimeError(f"rope_theta {theta} did not take effect (inv_freq[1] {float(inv[1])}, want {want})")
    # Perturb everything: HF's init leaves norm weights at 1 and biases at 0, which would
    # hide a mix-up between them.
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                # 1-D weights are norm scales (Gemma's are offsets from 1: it scales by 1 + w)
                is_norm_w = name.endswith("weight") and not is_gemma(family)
                p.copy_((1.0 if is_norm_w else 0.0) + 0.1 * torch.randn(p.shape, generator=g))
            elif "wpe" in name:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "wte" in name or "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                # nn.Linear is [out, in]; GPT-2's Conv1D is [in, out].
                fan_in = p.shape[0] if family == "gpt2" and "lm_head" not in name else p.shape[1]
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))
    if getattr(cfg, "tie_word_embeddings", False):
        model.tie_weights()
    return model


def hf_logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids]), use_cache=False).logits[0].double()


def hf_greedy(model, prompt, n):
    ids = list(prompt)
    steps = []
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([ids]), use_cache=False).logits[0, -1].double()
            steps.append(row)
            ids.append(int(torch.argmax(row)))
    return ids[len(prompt):], steps


def run(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{what} exited {r.returncode}: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def read_f32(path, shape):
    with open(path, "rb") as f:
        data = f.read()
    n = shape[0] * shape[1]
    if len(data) != 4 * n:
        raise RuntimeError(f"{path}: {len(data)} bytes, expected {4 * n}")
    return torch.tensor(struct.unpack(f"<{n}f", data), dtype=torch.float64).reshape(shape)


def read_i32(path):
    with open(path, "rb") as f:
        data = f.read()
    return list(struct.unpack(f"<{len(data) // 4}i", data))


def check_model(name, family, kwargs, theta, seed, args):
    d = os.path.join(args.out_dir, name)
    gpt_file = os.path.join(args.out_dir, name + ".gpt")
    model = build_model(family, kwargs, theta, seed)
    model.save_pretrained(d, safe_serialization=True)

    t0 = time.time()
    run([args.gpt, "convert", d, gpt_file, "--dtype", "f32", "--force", "--quiet", "--no-progress"], "gpt convert")
    t_conv = time.time() - t0

    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(seed + 1)
    prompt = [int(x) for x in torch.randint(0, vocab, (PROMPT_LEN,), generator=g)]

    ref = hf_logits(model, prompt)
    out_logits = os.path.join(args.out_dir, name + ".logits.f32")
    dev = ["--device", args.device]
    run([args.dump_logits] + dev + ["logits", gpt_file, out_logits] + [str(t) for t in prompt], "dump_logits logits")
    ours = read_f32(out_logits, (PROMPT_LEN, vocab))
    max_ref = float(ref.abs().max())
    max_diff = float((ours - ref).abs().max())
    rel = max_diff / max_ref if max_ref > 0 else float("inf")
    logits_ok = rel <= LOGIT_TOL and bool(torch.isfinite(ours).all())

    hf_tokens, steps = hf_greedy(model, prompt, args.tokens)
    out_ids = os.path.join(args.out_dir, name + ".ids.i32")
    run([args.dump_logits] + dev + ["generate", gpt_file, out_ids, str(args.tokens)] + [str(t) for t in prompt],
        "dump_logits generate")
    our_tokens = read_i32(out_ids)
    greedy = "identical"
    greedy_ok = our_tokens == hf_tokens
    if not greedy_ok:
        if len(our_tokens) != len(hf_tokens):
            greedy = f"{len(our_tokens)} tokens, expected {len(hf_tokens)}"
        else:
            i = next(k for k in range(len(hf_tokens)) if our_tokens[k] != hf_tokens[k])
            row = steps[i]
            gap = float(row[hf_tokens[i]] - row[our_tokens[i]])
            if gap <= TIE_TOL * float(row.abs().max()):
                greedy = f"near tie at {i} (gap {gap:.2e})"
                greedy_ok = True
            else:
                greedy = f"differs at {i}: {our_tokens[i]} vs {hf_tokens[i]} (gap {gap:.2e})"
    cfg = model.config
    if family == "gpt2":
        shape = f"d{cfg.n_embd} L{cfg.n_layer} h{cfg.n_head}x{cfg.n_embd // cfg.n_head} V{vocab}"
    else:
        hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        shape = (f"d{cfg.hidden_size} L{cfg.num_hidden_layers} q{cfg.num_attention_heads}/kv{cfg.num_key_value_heads}"
                 f"x{hd} V{vocab}")
    tied = "tied" if getattr(cfg, "tie_word_embeddings", False) else "untied"
    return dict(name=name, shape=f"{shape} {tied}", rel=rel, logits_ok=logits_ok, greedy=greedy, greedy_ok=greedy_ok,
                conv_s=t_conv)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--only", default="")
    ap.add_argument("--gpt", default=None)
    ap.add_argument("--dump-logits", default=None)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--device", default="cpu", help="our engine's device: cpu (default) or a CUDA ordinal (0, ...)")
    args = ap.parse_args()
    args.gpt = args.gpt or os.path.join(args.build_dir, "tools", "gpt")
    args.dump_logits = args.dump_logits or os.path.join(args.build_dir, "tests", "dump_logits")
    for p in (args.gpt, args.dump_logits):
        if not os.access(p, os.X_OK):
            print(f"hf_logits_check: {p} is missing or not executable (build first)", file=sys.stderr)
            return 2
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_grad_enabled(False)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; our engine on {args.device}; tolerance {LOGIT_TOL:g} "
          f"(max |diff| / max |ref| over {PROMPT_LEN} positions), {args.tokens} greedy tokens")

    rows, failures = [], 0
    for i, (name, family, kwargs, theta) in enumerate(MODELS):
        if args.only and args.only not in name:
            continue
        try:
            r = check_model(name, family, kwargs, theta, 1000 + i, args)
        except Exception as e:  # report and go on with the others
            r = dict(name=name, shape=family, rel=float("nan"), logits_ok=False, greedy=f"ERROR: {e}", greedy_ok=False, conv_s=0)
        ok = r["logits_ok"] and r["greedy_ok"]
        failures += not ok
        rows.append((r, ok))
        print(f"  {name}: {'ok' if ok else 'FAIL'}", flush=True)

    print()
    print(f"{'model':<28} {'shape':<36} {'max rel err':>12} {'convert s':>9}  {'greedy':<30} result")
    for r, ok in rows:
        greedy = r["greedy"] if len(r["greedy"]) <= 60 else r["greedy"][:57] + "..."
        print(f"{r['name']:<28} {r['shape']:<36} {r['rel']:>12.3e} {r['conv_s']:>9.2f}  {greedy:<30} {'ok' if ok else 'FAIL'}")
    for r, ok in rows:
        if not ok and r["greedy"].startswith("ERROR"):
            print(f"\n{r['name']}:\n{r['greedy']}")
    print(f"\n{len(rows) - failures}/{len(rows)} models match" + ("" if not failures else f"; {failures} FAILED"))
    return 1 if failures or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
