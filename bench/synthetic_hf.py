#!/usr/bin/env python3
"""bench/synthetic_hf.py SHAPE OUTDIR - a Hugging Face model directory (config.json +
model.safetensors, fp16, random normal weights scaled 0.02) of a named shape, for load-time
and first-token measurements on real files: `gpt convert OUTDIR model.gpt` then
`gpt bench model.gpt`. Needs numpy and safetensors (the GPU machine has both).
Shapes: tinyllama-1.1b (llama, 2048 wide, 22 layers, 32/4 heads, ff 5632, vocab 32000),
gpt2-124m."""
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

SHAPES = {
    "tinyllama-1.1b": dict(model_type="llama", hidden_size=2048, num_hidden_layers=22, num_attention_heads=32,
                           num_key_value_heads=4, intermediate_size=5632, vocab_size=32000,
                           max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
                           tie_word_embeddings=False, torch_dtype="float16", bos_token_id=1, eos_token_id=2),
    "gpt2-124m": dict(model_type="gpt2", n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257,
                      layer_norm_epsilon=1e-5, torch_dtype="float16", bos_token_id=50256, eos_token_id=50256),
}


def tensors(c, rng):
    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    def ones(n):
        return np.ones(n, dtype=np.float16)

    t = {}
    if c["model_type"] == "llama":
        d, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
        hd = d // c["num_attention_heads"]
        kv = c["num_key_value_heads"] * hd
        t["model.embed_tokens.weight"] = w(v, d)
        for i in range(c["num_hidden_layers"]):
            p = "model.layers.%d." % i
            t[p + "input_layernorm.weight"] = ones(d)
            t[p + "self_attn.q_proj.weight"] = w(d, d)
            t[p + "self_attn.k_proj.weight"] = w(kv, d)
            t[p + "self_attn.v_proj.weight"] = w(kv, d)
            t[p + "self_attn.o_proj.weight"] = w(d, d)
            t[p + "post_attention_layernorm.weight"] = ones(d)
            t[p + "mlp.gate_proj.weight"] = w(f, d)
            t[p + "mlp.up_proj.weight"] = w(f, d)
            t[p + "mlp.down_proj.weight"] = w(d, f)
        t["model.norm.weight"] = ones(d)
        t["lm_head.weight"] = w(v, d)
    else:
        d, v, n = c["n_embd"], c["vocab_size"], c["n_positions"]
        t["wte.weight"] = w(v, d)
        t["wpe.weight"] = w(n, d)
        for i in range(c["n_layer"]):
            p = "h.%d." % i
            t[p + "ln_1.weight"], t[p + "ln_1.bias"] = ones(d), w(d)
            t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"] = w(d, 3 * d), w(3 * d)
            t[p + "attn.c_proj.weight"], t[p + "attn.c_proj.bias"] = w(d, d), w(d)
            t[p + "ln_2.weight"], t[p + "ln_2.bias"] = ones(d), w(d)
            t[p + "mlp.c_fc.weight"], t[p + "mlp.c_fc.bias"] = w(d, 4 * d), w(4 * d)
            t[p + "mlp.c_proj.weight"], t[p + "mlp.c_proj.bias"] = w(4 * d, d), w(d)
        t["ln_f.weight"], t["ln_f.bias"] = ones(d), w(d)
    return t


def main(argv):
    if len(argv) != 3 or argv[1] not in SHAPES:
        print(__doc__, file=sys.stderr)
        return 2
    c, out = SHAPES[argv[1]], argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    save_file(tensors(c, np.random.default_rng(1)), os.path.join(out, "model.safetensors"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
