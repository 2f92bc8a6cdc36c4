"""Tiny random weight files, written in pure Python, for tests and examples.

A fixture model has random weights (its text is gibberish) but is a complete, valid weight
file (docs/FORMAT.md, version 1): a Llama (or GPT-2) with a byte-level BPE tokenizer, so
every call of the library can be exercised without a real model.

    python3 -m libgpt.fixture OUT.gpt [--arch llama|gpt2] [--seed N]

or from Python: ``libgpt.fixture.write_model("tiny.gpt")``.

The writer follows lib/format/writer.cpp: a 128-byte header, the metadata section, the tensor
table, tensor data at 256-byte aligned offsets, crc32 (zlib's) over every part.
"""

import argparse
import random
import struct
import sys
import zlib

__all__ = ["write_weight_file", "encode_weight_file", "make_model", "write_model", "byte_level_tokenizer"]

_MAGIC = b"GPTW\r\n\x1a\n"
_HEADER_SIZE = 128
_ALIGN = 256

# Metadata value types (lib/format/spec.h MetaType).
U32, I32, F32, U64, STR, I32_ARRAY, F32_ARRAY, STR_ARRAY = range(1, 9)
# Tensor dtypes (lib/core/dtype.h: the gpt_dtype values).
DTYPE_F32, DTYPE_F16 = 1, 2


def _str(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<I", len(b)) + b


def _encode_value(kind, value):
    if kind == U32:
        return struct.pack("<I", value)
    if kind == I32:
        return struct.pack("<i", value)
    if kind == F32:
        return struct.pack("<f", value)
    if kind == U64:
        return struct.pack("<Q", value)
    if kind == STR:
        return _str(value)
    if kind == I32_ARRAY:
        return struct.pack("<I%di" % len(value), len(value), *value)
    if kind == F32_ARRAY:
        return struct.pack("<I%df" % len(value), len(value), *value)
    if kind == STR_ARRAY:
        return struct.pack("<I", len(value)) + b"".join(_str(s) for s in value)
    raise ValueError("unknown metadata type %r" % (kind,))


def _align(n, a=_ALIGN):
    return (n + a - 1) // a * a


def encode_weight_file(metadata, tensors):
    """Returns the bytes of a weight file.

    metadata: list of (key, type, value), type one of U32 .. STR_ARRAY.
    tensors:  list of (name, dtype, shape, data bytes), dtype DTYPE_F32 or DTYPE_F16.
    """
    meta = bytearray(struct.pack("<I", len(metadata)))
    for key, kind, value in metadata:
        k = key.encode("utf-8")
        meta += struct.pack("<H", len(k)) + k + struct.pack("<B", kind) + _encode_value(kind, value)
    table = bytearray()
    offset = 0
    placed = []
    for name, dtype, shape, data in tensors:
        n = 1
        for d in shape:
            n *= d
        if len(data) != n * (4 if dtype == DTYPE_F32 else 2):
            raise ValueError("tensor %s: %d bytes for shape %r" % (name, len(data), shape))
        nb = name.encode("utf-8")
        table += struct.pack("<H", len(nb)) + nb + struct.pack("<BBH", dtype, len(shape), 0)
        table += struct.pack("<%dQ" % len(shape), *shape)
        table += struct.pack("<QQI", offset, len(data), zlib.crc32(data) & 0xFFFFFFFF)
        placed.append((offset, data))
        offset = _align(offset + len(data))
    meta_offset = _HEADER_SIZE
    table_offset = meta_offset + len(meta)
    data_offset = _align(table_offset + len(table))
    file_size = data_offset + (placed[-1][0] + len(placed[-1][1]) if placed else 0)
    header = bytearray(_HEADER_SIZE)
    header[0:8] = _MAGIC
    struct.pack_into("<IIQQQQQQII", header, 8, 1, _HEADER_SIZE, file_size, meta_offset, len(meta), table_offset,
                     len(table), data_offset, len(tensors), _ALIGN)
    struct.pack_into("<II", header, 72, zlib.crc32(meta) & 0xFFFFFFFF, zlib.crc32(table) & 0xFFFFFFFF)
    struct.pack_into("<I", header, 124, zlib.crc32(bytes(header[:124])) & 0xFFFFFFFF)
    out = bytearray(file_size)
    out[0:_HEADER_SIZE] = header
    out[meta_offset:table_offset] = meta
    out[table_offset:table_offset + len(table)] = table
    for off, data in placed:
        out[data_offset + off:data_offset + off + len(data)] = data
    return bytes(out)


def write_weight_file(path, metadata, tensors):
    """Writes encode_weight_file(metadata, tensors) to path."""
    data = encode_weight_file(metadata, tensors)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def _bytes_to_unicode():
    """GPT-2's byte -> printable character mapping (the spelling of byte-level BPE tokens)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# Merges of the fixture tokenizer (highest priority first), spelled in plain text; a space
# is spelled with the byte mapping's "\u0120" by byte_level_tokenizer.
_MERGES = [("t", "h"), ("th", "e"), (" ", "the"), ("h", "e"), (" ", "he"), ("a", "n"), ("an", "d"),
           (" ", "and"), ("i", "n"), (" ", "in"), ("e", "r"), ("o", "u"), ("o", "f"), (" ", "of"),
           ("L", "or"), ("o", "r"), ("Lor", "d"), (" ", "Lord"), (" ", "a"), (" ", "s"), ("i", "s"),
           (" ", "is"), ("e", "n"), ("l", "l"), (" ", "w"), ("a", "t"), (" ", "t"), ("o", "n")]


def byte_level_tokenizer():
    """(tokens, types, merges, eos_id) of a small byte-level BPE vocabulary: the 256 byte tokens,
    one token per merge and a control token "<|endoftext|>" (the EOS)."""
    b2u = _bytes_to_unicode()

    def spell(text):
        return "".join(b2u[b] for b in text.encode("utf-8"))

    tokens = [b2u[b] for b in range(256)]
    merges = []
    for a, b in _MERGES:
        merged = spell(a + b)
        if merged not in tokens:
            tokens.append(merged)
        merges.append(spell(a) + " " + spell(b))
    types = [1] * len(tokens)
    tokens.append("<|endoftext|>")
    types.append(3)
    return tokens, types, merges, len(tokens) - 1


def make_model(arch="llama", seed=1, n_layers=2, d_model=32, n_heads=4, n_kv_heads=2, d_ff=64,
               context_length=256, name="fixture", tied_head=False, chat_template=None, n_experts=4,
               n_experts_used=2, d_ff_expert=24):
    """Returns the bytes of a random model with the byte-level tokenizer (and chat_template, a
    Jinja2 text, as tokenizer.chat_template when given). arch "mixtral": every layer a mixture
    of n_experts SwiGLU experts of width d_ff_expert, n_experts_used per token."""
    tokens, types, merges, eos = byte_level_tokenizer()
    vocab = len(tokens)
    gpt2 = arch == "gpt2"
    if gpt2:
        n_kv_heads = n_heads
    head_dim = d_model // n_heads
    meta = [
        ("general.architecture", STR, arch),
        ("general.name", STR, name),
        ("general.source", STR, "libgpt.fixture (random weights)"),
        ("model.n_layers", U32, n_layers),
        ("model.d_model", U32, d_model),
        ("model.n_heads", U32, n_heads),
        ("model.n_kv_heads", U32, n_kv_heads),
        ("model.head_dim", U32, head_dim),
        ("model.d_ff", U32, d_ff),
        ("model.vocab_size", U32, vocab),
        ("model.context_length", U32, context_length),
        ("model.norm_eps", F32, 1e-5),
        ("model.tied_head", U32, 1 if tied_head else 0),
    ]
    if not gpt2:
        meta.append(("model.rope_theta", F32, 10000.0))
    moe = arch == "mixtral"
    if moe:
        meta += [("model.n_experts", U32, n_experts), ("model.n_experts_used", U32, n_experts_used),
                 ("model.d_ff_expert", U32, d_ff_expert), ("model.norm_topk_prob", U32, 1)]
    meta += [
        ("tokenizer.model", STR, "bpe"),
        ("tokenizer.pre", STR, "gpt2"),
        ("tokenizer.tokens", STR_ARRAY, tokens),
        ("tokenizer.types", I32_ARRAY, types),
        ("tokenizer.merges", STR_ARRAY, merges),
        ("tokenizer.bos_id", I32, -1),
        ("tokenizer.eos_id", I32, eos),
    ]
    if chat_template is not None:
        meta.append(("tokenizer.chat_template", STR, chat_template))
    q, kv = n_heads * head_dim, n_kv_heads * head_dim
    shapes = [("tok_emb.weight", (vocab, d_model))]
    if gpt2:
        shapes.append(("pos_emb.weight", (context_length, d_model)))
    for i in range(n_layers):
        p = "blk.%d." % i
        if gpt2:
            shapes += [(p + "attn_norm.weight", (d_model,)), (p + "attn_norm.bias", (d_model,)),
                       (p + "attn_qkv.weight", (q + 2 * kv, d_model)), (p + "attn_qkv.bias", (q + 2 * kv,)),
                       (p + "attn_out.weight", (d_model, q)), (p + "attn_out.bias", (d_model,)),
                       (p + "ffn_norm.weight", (d_model,)), (p + "ffn_norm.bias", (d_model,)),
                       (p + "ffn_up.weight", (d_ff, d_model)), (p + "ffn_up.bias", (d_ff,)),
                       (p + "ffn_down.weight", (d_model, d_ff)), (p + "ffn_down.bias", (d_model,))]
        else:
            shapes += [(p + "attn_norm.weight", (d_model,)), (p + "attn_qkv.weight", (q + 2 * kv, d_model)),
                       (p + "attn_out.weight", (d_model, q)), (p + "ffn_norm.weight", (d_model,))]
            if moe:
                shapes += [(p + "ffn_router.weight", (n_experts, d_model)),
                           (p + "ffn_experts_gate_up.weight", (n_experts * 2 * d_ff_expert, d_model)),
                           (p + "ffn_experts_down.weight", (n_experts * d_model, d_ff_expert))]
            else:
                shapes += [(p + "ffn_gate_up.weight", (2 * d_ff, d_model)), (p + "ffn_down.weight", (d_model, d_ff))]
    shapes.append(("out_norm.weight", (d_model,)))
    if gpt2:
        shapes.append(("out_norm.bias", (d_model,)))
    if not tied_head:
        shapes.append(("lm_head.weight", (vocab, d_model)))

    rng = random.Random(seed)
    tensors = []
    for tname, shape in shapes:
        n = 1
        for d in shape:
            n *= d
        if tname.endswith("norm.weight"):
            values = [1.0 + 0.1 * rng.gauss(0.0, 1.0) for _ in range(n)]
        elif len(shape) == 1:
            values = [0.1 * rng.gauss(0.0, 1.0) for _ in range(n)]
        else:
            scale = 1.2 / (shape[-1] ** 0.5)
            values = [scale * rng.gauss(0.0, 1.0) for _ in range(n)]
        tensors.append((tname, DTYPE_F32, shape, struct.pack("<%df" % n, *values)))
    return encode_weight_file(meta, tensors)


def write_model(path, **kwargs):
    """Writes make_model(**kwargs) to path; returns path."""
    data = make_model(**kwargs)
    with open(path, "wb") as f:
        f.write(data)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m libgpt.fixture",
                                 description="Write a tiny random model (byte-level BPE tokenizer) for tests.")
    ap.add_argument("out", help="weight file to write")
    ap.add_argument("--arch", choices=["llama", "gpt2"], default="llama")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    write_model(args.out, arch=args.arch, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
