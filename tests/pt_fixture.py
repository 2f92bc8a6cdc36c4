"""PyTorch checkpoints without torch: files in the exact byte layout torch.save writes, and
naive double-precision forward passes of the three training scripts' models, for
tests/test_pt.py (CI has no torch; tests/reference/pt_check.py checks the same against the
real torch on the GPU machine).

The writer: the pickle is Python's own (protocol 2, as torch.save uses) with torch's globals
(torch._utils._rebuild_tensor_v2, torch.FloatStorage, ...) stood in by placeholders registered
under torch's module names for the duration of the dump only, and storages written as
persistent ids ('storage', <storage class>, key, location, numel). The zip: every entry
stored, flags 0x808 (sizes in a data descriptor after the data, zeros in the local header),
record data aligned to 64 bytes by an "FB" extra field, a `version` record (and `byteorder`,
`.format_version`, `.storage_alignment`, `.data/serialization_id` for the torch 2 layout),
optionally ZIP64 throughout.

The references follow the scripts' code (nanoGPT model.py, minGPT model.py, the lecture's
gpt.py) on their own tensor names: they share nothing with the converter's mapping.
"""

import collections
import math
import pickle
import random
import struct
import sys
import types
import zlib

# ---------------------------------------------------------------- values as stored


def round_to(values, dtype):
    """The values a storage of dtype holds (f32, f16 or bf16), as Python floats."""
    if dtype == "f32":
        return list(struct.unpack("<%df" % len(values), struct.pack("<%df" % len(values), *values)))
    if dtype == "f16":
        return list(struct.unpack("<%de" % len(values), struct.pack("<%de" % len(values), *values)))
    out = []
    for v in values:  # bf16: f32 rounded to nearest even on the top 16 bits
        (u,) = struct.unpack("<I", struct.pack("<f", v))
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        out.append(struct.unpack("<f", struct.pack("<I", u))[0])
    return out


def encode(values, dtype):
    if dtype == "f32":
        return struct.pack("<%df" % len(values), *values)
    if dtype == "f16":
        return struct.pack("<%de" % len(values), *values)
    return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in values)


STORAGE_CLASS = {"f32": "FloatStorage", "f16": "HalfStorage", "bf16": "BFloat16Storage", "i64": "LongStorage"}


class Storage:
    def __init__(self, key, dtype, data, numel=None):
        self.key, self.dtype, self.data = key, dtype, data
        self.numel = numel if numel is not None else len(data) // {"f32": 4, "f16": 2, "bf16": 2, "i64": 8}[dtype]


class Tensor:
    """A view (offset, shape, stride in elements) on a storage, pickled as torch pickles one."""

    def __init__(self, storage, offset, shape, stride, parameter=False):
        self.storage, self.offset, self.shape, self.stride, self.parameter = storage, offset, tuple(shape), tuple(stride), parameter

    def __reduce_ex__(self, proto):
        mod = sys.modules["torch._utils"]
        inner = (mod._rebuild_tensor_v2, (self.storage, self.offset, self.shape, self.stride, False, collections.OrderedDict()))
        if self.parameter:
            return (mod._rebuild_parameter, (Tensor(self.storage, self.offset, self.shape, self.stride), True, collections.OrderedDict()))
        return inner


def contiguous_stride(shape):
    stride, n = [], 1
    for d in reversed(shape):
        stride.insert(0, n)
        n *= d
    return tuple(stride)


class Weights:
    """Random tensors of one dtype, each in its own storage unless given a view."""

    def __init__(self, rng, dtype):
        self.rng, self.dtype, self.next_key = rng, dtype, 0
        self.values = {}  # name -> flat row-major values as the model sees them

    def new_storage(self, values):
        s = Storage(str(self.next_key), self.dtype, encode(values, self.dtype))
        self.next_key += 1
        return s

    def tensor(self, name, shape, scale=0.3, layout="contiguous", values=None):
        n = 1
        for d in shape:
            n *= d
        vals = round_to(values if values is not None else [self.rng.gauss(0, scale) for _ in range(n)], self.dtype)
        self.values[name] = vals
        if layout == "contiguous":
            return Tensor(self.new_storage(vals), 0, shape, contiguous_stride(shape))
        if layout == "offset":  # a slice of a larger storage, starting past its beginning
            pad = [0.5] * 7
            return Tensor(self.new_storage(pad + vals + pad), len(pad), shape, contiguous_stride(shape))
        if layout == "transposed":  # stored [cols][rows], viewed [rows][cols] (a .t())
            rows, cols = shape
            stored = [vals[r * cols + c] for c in range(cols) for r in range(rows)]
            return Tensor(self.new_storage(stored), 0, shape, (1, rows))
        if layout == "gapped":  # every other row of a storage twice as tall
            rows, cols = shape
            stored = []
            for r in range(rows):
                stored += vals[r * cols:(r + 1) * cols] + [9.0] * cols
            return Tensor(self.new_storage(stored), 0, shape, (2 * cols, 1))
        raise ValueError(layout)

    def ones_mask(self, block):
        """A causal mask buffer as old nanoGPT and minGPT register it: [1, 1, T, T]."""
        vals = [1.0 if c <= r else 0.0 for r in range(block) for c in range(block)]
        s = Storage(str(self.next_key), "f32", encode(vals, "f32"))
        self.next_key += 1
        return Tensor(s, 0, (1, 1, block, block), contiguous_stride((1, 1, block, block)))

    def scalar(self, value):
        s = Storage(str(self.next_key), "f32", encode([value], "f32"))
        self.next_key += 1
        return Tensor(s, 0, (), ())


# ---------------------------------------------------------------- the pickle


def _fake_torch_modules():
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def named(fn, module, name):
        fn.__module__, fn.__qualname__, fn.__name__ = module, name, name
        return fn

    utils._rebuild_tensor_v2 = named(lambda *a: None, "torch._utils", "_rebuild_tensor_v2")
    utils._rebuild_parameter = named(lambda *a: None, "torch._utils", "_rebuild_parameter")
    for cls in set(STORAGE_CLASS.values()):
        setattr(torch, cls, type(cls, (), {"__module__": "torch", "__qualname__": cls}))
    torch._utils = utils
    return {"torch": torch, "torch._utils": utils}


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", getattr(sys.modules["torch"], STORAGE_CLASS[obj.dtype]), obj.key, "cpu", obj.numel)
        return None


def dumps(obj):
    """(pickle bytes, {key: storage}) of obj, as torch.save's data.pkl."""
    fake = _fake_torch_modules()
    saved = {k: sys.modules.get(k) for k in fake}
    sys.modules.update(fake)
    try:
        import io

        buf = io.BytesIO()
        storages = {}

        class P(_Pickler):
            def persistent_id(self, o):
                if isinstance(o, Storage):
                    storages[o.key] = o
                return _Pickler.persistent_id(self, o)

        P(buf, protocol=2).dump(obj)
        return buf.getvalue(), storages
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def state_dict(entries, metadata=True):
    """An OrderedDict of tensors with torch's `_metadata` attribute (a BUILD in the pickle)."""
    d = collections.OrderedDict(entries)
    if metadata:
        d._metadata = collections.OrderedDict([("", {"version": 1})])
    return d


# ---------------------------------------------------------------- the zip


def zip_archive(records, zip64=False):
    """records: [(name, bytes)] in order. Stored entries, 64-byte aligned data, flags 0x808."""
    out = bytearray()
    central = bytearray()
    for name, data in records:
        name_b = name.encode()
        crc = zlib.crc32(data) & 0xFFFFFFFF
        offset = len(out)
        # Local header: sizes and crc zero (bit 3), padded by an "FB" extra field.
        header_len = 30 + len(name_b)
        pad = (-(offset + header_len + 4)) % 64
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 20, 0x808, 0, 0, 0, 0, 0, 0, len(name_b), len(extra))
        out += name_b + extra
        assert len(out) % 64 == 0
        out += data
        if zip64:
            out += struct.pack("<IIQQ", 0x08074B50, crc, len(data), len(data))
        else:
            out += struct.pack("<IIII", 0x08074B50, crc, len(data), len(data))
        if zip64:
            cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), offset)
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0x808, 0, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                                   len(name_b), len(cextra), 0, 0, 0, 0, 0xFFFFFFFF)
        else:
            cextra = b""
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0x808, 0, 0, 0, crc, len(data), len(data),
                                   len(name_b), 0, 0, 0, 0, 0, offset)
        central += name_b + cextra
    cd_offset = len(out)
    out += central
    n = len(records)
    if zip64:
        e64 = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(central), cd_offset)
        out += struct.pack("<IIQI", 0x07064B50, 0, e64, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    else:
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(central), cd_offset, 0)
    return bytes(out)


def torch_save(obj, folder="archive", variant="torch2", zip64=False):
    """The bytes torch.save(obj, f) writes; folder is the file's base name ('ckpt' for
    out/ckpt.pt) or 'archive' for a buffer. variant 'torch1' is torch 1.13's entry set."""
    pkl, storages = dumps(obj)
    records = [(folder + "/data.pkl", pkl)]
    if variant == "torch2":
        records += [(folder + "/.format_version", b"1"), (folder + "/.storage_alignment", b"64"), (folder + "/byteorder", b"little")]
    for key in sorted(storages, key=lambda k: (len(k), k)):
        records.append((folder + "/data/" + key, storages[key].data))
    records.append((folder + "/version", b"3\n"))
    if variant == "torch2":
        records.append((folder + "/.data/serialization_id", b"1234567890123456789012345678901234567890"))
    return zip_archive(records, zip64)


# ---------------------------------------------------------------- the three scripts' models


def make_nanogpt(rng, n_layer=2, n_head=2, n_embd=16, block=8, vocab=23, bias=True, dtype="f32", tied=True, compiled=False,
                 masks=False, optimizer=True, layouts=False, dataset="shakespeare_char"):
    """(checkpoint dict as nanoGPT's train.py saves it, Weights)."""
    w = Weights(rng, dtype)
    lay = (lambda kind: kind) if layouts else (lambda kind: "contiguous")
    d = n_embd
    sd = [("transformer.wte.weight", w.tensor("transformer.wte.weight", (vocab, d), layout=lay("offset"))),
          ("transformer.wpe.weight", w.tensor("transformer.wpe.weight", (block, d)))]
    for i in range(n_layer):
        p = "transformer.h.%d." % i
        sd.append((p + "ln_1.weight", w.tensor(p + "ln_1.weight", (d,), values=[1 + rng.gauss(0, 0.1) for _ in range(d)])))
        if bias:
            sd.append((p + "ln_1.bias", w.tensor(p + "ln_1.bias", (d,), 0.1)))
        if masks:
            sd.append((p + "attn.bias", w.ones_mask(block)))
        sd.append((p + "attn.c_attn.weight", w.tensor(p + "attn.c_attn.weight", (3 * d, d), layout=lay("transposed"))))
        if bias:
            sd.append((p + "attn.c_attn.bias", w.tensor(p + "attn.c_attn.bias", (3 * d,), 0.1)))
        sd.append((p + "attn.c_proj.weight", w.tensor(p + "attn.c_proj.weight", (d, d), layout=lay("gapped"))))
        if bias:
            sd.append((p + "attn.c_proj.bias", w.tensor(p + "attn.c_proj.bias", (d,), 0.1)))
        sd.append((p + "ln_2.weight", w.tensor(p + "ln_2.weight", (d,), values=[1 + rng.gauss(0, 0.1) for _ in range(d)])))
        if bias:
            sd.append((p + "ln_2.bias", w.tensor(p + "ln_2.bias", (d,), 0.1)))
        sd.append((p + "mlp.c_fc.weight", w.tensor(p + "mlp.c_fc.weight", (4 * d, d))))
        if bias:
            sd.append((p + "mlp.c_fc.bias", w.tensor(p + "mlp.c_fc.bias", (4 * d,), 0.1)))
        sd.append((p + "mlp.c_proj.weight", w.tensor(p + "mlp.c_proj.weight", (d, 4 * d))))
        if bias:
            sd.append((p + "mlp.c_proj.bias", w.tensor(p + "mlp.c_proj.bias", (d,), 0.1)))
    sd.append(("transformer.ln_f.weight", w.tensor("transformer.ln_f.weight", (d,), values=[1 + rng.gauss(0, 0.1) for _ in range(d)])))
    if bias:
        sd.append(("transformer.ln_f.bias", w.tensor("transformer.ln_f.bias", (d,), 0.1)))
    if tied:  # the same storage as wte (nanoGPT's weight tying), a second tensor object
        wte = sd[0][1]
        sd.append(("lm_head.weight", Tensor(wte.storage, wte.offset, wte.shape, wte.stride)))
        w.values["lm_head.weight"] = w.values["transformer.wte.weight"]
    else:
        sd.append(("lm_head.weight", w.tensor("lm_head.weight", (vocab, d))))
    if compiled:
        sd = [("_orig_mod." + k, v) for k, v in sd]
    ckpt = {"model": state_dict(sd)}
    if optimizer:
        state = {i: {"step": w.scalar(3.0), "exp_avg": w.tensor("opt.%d.m" % i, (d,)), "exp_avg_sq": w.tensor("opt.%d.v" % i, (d,))}
                 for i in range(3)}
        groups = [{"lr": 6e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1, "amsgrad": False, "foreach": None,
                   "maximize": False, "capturable": False, "differentiable": False, "fused": None, "params": [0, 1, 2]}]
        ckpt["optimizer"] = {"state": state, "param_groups": groups}
    ckpt["model_args"] = {"n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "block_size": block, "bias": bias,
                          "vocab_size": vocab, "dropout": 0.0}
    ckpt["iter_num"] = 250
    ckpt["best_val_loss"] = w.scalar(1.4697)
    ckpt["config"] = {"out_dir": "out-shakespeare-char", "dataset": dataset, "n_layer": n_layer, "learning_rate": 1e-3,
                      "compile": compiled, "dtype": "bfloat16"}
    cfg = {"n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "block_size": block, "vocab": vocab, "bias": bias,
           "gelu": "erf", "style": "gpt"}
    return ckpt, w, cfg


def make_mingpt(rng, n_layer=2, n_head=2, n_embd=16, block=8, vocab=23, dtype="f32"):
    """(bare state dict as chargpt.py saves it, Weights, config)."""
    ckpt, w, cfg = make_nanogpt(rng, n_layer, n_head, n_embd, block, vocab, bias=True, dtype=dtype, tied=False, masks=True,
                                optimizer=False)
    cfg["gelu"] = "tanh"
    return ckpt["model"], w, cfg


def make_lecture(rng, n_layer=2, n_head=2, n_embd=16, block=8, vocab=23, dtype="f32"):
    """(state dict of the lecture's gpt.py BigramLanguageModel, Weights, config)."""
    w = Weights(rng, dtype)
    d, hs = n_embd, n_embd // n_head
    sd = [("token_embedding_table.weight", w.tensor("token_embedding_table.weight", (vocab, d))),
          ("position_embedding_table.weight", w.tensor("position_embedding_table.weight", (block, d)))]
    tril_vals = [1.0 if c <= r else 0.0 for r in range(block) for c in range(block)]
    for i in range(n_layer):
        p = "blocks.%d." % i
        for h in range(n_head):
            q = p + "sa.heads.%d." % h
            sd.append((q + "tril", Tensor(w.new_storage(round_to(tril_vals, dtype)), 0, (block, block), (block, 1))))
            for part in ("key", "query", "value"):
                sd.append((q + part + ".weight", w.tensor(q + part + ".weight", (hs, d))))
        sd.append((p + "sa.proj.weight", w.tensor(p + "sa.proj.weight", (d, d))))
        sd.append((p + "sa.proj.bias", w.tensor(p + "sa.proj.bias", (d,), 0.1)))
        sd.append((p + "ffwd.net.0.weight", w.tensor(p + "ffwd.net.0.weight", (4 * d, d))))
        sd.append((p + "ffwd.net.0.bias", w.tensor(p + "ffwd.net.0.bias", (4 * d,), 0.1)))
        sd.append((p + "ffwd.net.2.weight", w.tensor(p + "ffwd.net.2.weight", (d, 4 * d))))
        sd.append((p + "ffwd.net.2.bias", w.tensor(p + "ffwd.net.2.bias", (d,), 0.1)))
        for ln in ("ln1", "ln2"):
            sd.append((p + ln + ".weight", w.tensor(p + ln + ".weight", (d,), values=[1 + rng.gauss(0, 0.1) for _ in range(d)])))
            sd.append((p + ln + ".bias", w.tensor(p + ln + ".bias", (d,), 0.1)))
    sd.append(("ln_f.weight", w.tensor("ln_f.weight", (d,), values=[1 + rng.gauss(0, 0.1) for _ in range(d)])))
    sd.append(("ln_f.bias", w.tensor("ln_f.bias", (d,), 0.1)))
    sd.append(("lm_head.weight", w.tensor("lm_head.weight", (vocab, d))))
    sd.append(("lm_head.bias", w.tensor("lm_head.bias", (vocab,), 0.5)))
    cfg = {"n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "block_size": block, "vocab": vocab, "style": "lecture"}
    return state_dict(sd), w, cfg


# ---------------------------------------------------------------- naive references (double)


def _linear(x, W, rows, cols, b=None):
    """x [cols] -> W [rows][cols] . x (+ b)."""
    out = []
    for r in range(rows):
        row = W[r * cols:(r + 1) * cols]
        s = math.fsum(row[c] * x[c] for c in range(cols))
        out.append(s + (b[r] if b is not None else 0.0))
    return out


def _layer_norm(x, w, b, eps=1e-5):
    n = len(x)
    mean = math.fsum(x) / n
    var = math.fsum((v - mean) ** 2 for v in x) / n
    inv = 1.0 / math.sqrt(var + eps)
    return [(x[i] - mean) * inv * w[i] + (b[i] if b is not None else 0.0) for i in range(n)]


def _attend(qs, ks, vs, hs):
    """Causal attention of one head over positions: softmax(q k / sqrt(hs)) v."""
    out = []
    for t in range(len(qs)):
        scores = [math.fsum(qs[t][i] * ks[u][i] for i in range(hs)) / math.sqrt(hs) for u in range(t + 1)]
        m = max(scores)
        e = [math.exp(s - m) for s in scores]
        z = math.fsum(e)
        out.append([math.fsum(e[u] * vs[u][i] for u in range(t + 1)) / z for i in range(hs)])
    return out


def _gelu(x, kind):
    if kind == "erf":
        return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def reference_logits(cfg, values, tokens):
    """Logits [len(tokens)][vocab] of the script's model (eval mode: no dropout)."""
    d, nh, V = cfg["n_embd"], cfg["n_head"], cfg["vocab"]
    hs = d // nh
    g = values.get
    T = len(tokens)
    if cfg["style"] == "gpt":
        wte, wpe = g("transformer.wte.weight"), g("transformer.wpe.weight")
    else:
        wte, wpe = g("token_embedding_table.weight"), g("position_embedding_table.weight")
    x = [[wte[tok * d + i] + wpe[t * d + i] for i in range(d)] for t, tok in enumerate(tokens)]
    for layer in range(cfg["n_layer"]):
        if cfg["style"] == "gpt":
            p = "transformer.h.%d." % layer
            h = [_layer_norm(r, g(p + "ln_1.weight"), g(p + "ln_1.bias")) for r in x]
            qkv = [_linear(r, g(p + "attn.c_attn.weight"), 3 * d, d, g(p + "attn.c_attn.bias")) for r in h]
            heads = []
            for hh in range(nh):
                qs = [r[hh * hs:(hh + 1) * hs] for r in qkv]
                ks = [r[d + hh * hs:d + (hh + 1) * hs] for r in qkv]
                vs = [r[2 * d + hh * hs:2 * d + (hh + 1) * hs] for r in qkv]
                heads.append(_attend(qs, ks, vs, hs))
            y = [sum((heads[hh][t] for hh in range(nh)), []) for t in range(T)]
            att = [_linear(r, g(p + "attn.c_proj.weight"), d, d, g(p + "attn.c_proj.bias")) for r in y]
            x = [[x[t][i] + att[t][i] for i in range(d)] for t in range(T)]
            h = [_layer_norm(r, g(p + "ln_2.weight"), g(p + "ln_2.bias")) for r in x]
            up = [[_gelu(v, cfg["gelu"]) for v in _linear(r, g(p + "mlp.c_fc.weight"), 4 * d, d, g(p + "mlp.c_fc.bias"))] for r in h]
            down = [_linear(r, g(p + "mlp.c_proj.weight"), d, 4 * d, g(p + "mlp.c_proj.bias")) for r in up]
            x = [[x[t][i] + down[t][i] for i in range(d)] for t in range(T)]
        else:
            p = "blocks.%d." % layer
            h = [_layer_norm(r, g(p + "ln1.weight"), g(p + "ln1.bias")) for r in x]
            heads = []
            for hh in range(nh):
                q = p + "sa.heads.%d." % hh
                ks = [_linear(r, g(q + "key.weight"), hs, d) for r in h]
                qs = [_linear(r, g(q + "query.weight"), hs, d) for r in h]
                vs = [_linear(r, g(q + "value.weight"), hs, d) for r in h]
                heads.append(_attend(qs, ks, vs, hs))
            y = [sum((heads[hh][t] for hh in range(nh)), []) for t in range(T)]
            att = [_linear(r, g(p + "sa.proj.weight"), d, d, g(p + "sa.proj.bias")) for r in y]
            x = [[x[t][i] + att[t][i] for i in range(d)] for t in range(T)]
            h = [_layer_norm(r, g(p + "ln2.weight"), g(p + "ln2.bias")) for r in x]
            up = [[max(v, 0.0) for v in _linear(r, g(p + "ffwd.net.0.weight"), 4 * d, d, g(p + "ffwd.net.0.bias"))] for r in h]
            down = [_linear(r, g(p + "ffwd.net.2.weight"), d, 4 * d, g(p + "ffwd.net.2.bias")) for r in up]
            x = [[x[t][i] + down[t][i] for i in range(d)] for t in range(T)]
    lnf_w = g("transformer.ln_f.weight") if cfg["style"] == "gpt" else g("ln_f.weight")
    lnf_b = g("transformer.ln_f.bias") if cfg["style"] == "gpt" else g("ln_f.bias")
    head_b = g("lm_head.bias") if cfg["style"] == "lecture" else None
    return [_linear(_layer_norm(r, lnf_w, lnf_b), g("lm_head.weight"), V, d, head_b) for r in x]


def reference_generate(cfg, values, prompt, n):
    """The scripts' generate() with argmax: each token from the last block_size tokens."""
    idx = list(prompt)
    for _ in range(n):
        logits = reference_logits(cfg, values, idx[-cfg["block_size"]:])[-1]
        idx.append(max(range(len(logits)), key=lambda i: logits[i]))
    return idx[len(prompt):]


def meta_pkl(chars, protocol=4):
    """nanoGPT's data/<dataset>/meta.pkl for the sorted characters."""
    itos = {i: ch for i, ch in enumerate(chars)}
    stoi = {ch: i for i, ch in enumerate(chars)}
    return pickle.dumps({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, protocol=protocol)


def write_corpus(directory):
    """Seeds of tests/fuzz/corpus/fuzz_pt: tiny files of every layout (kept small so the
    fuzzer's executions stay fast)."""
    import os

    os.makedirs(directory, exist_ok=True)
    tiny = dict(n_layer=1, n_head=1, n_embd=4, block=4, vocab=5)
    files = {
        "nanogpt.pt": F_save(make_nanogpt(random.Random(1), **tiny)[0], "ckpt"),
        "nanogpt_compiled_bf16.pt": F_save(make_nanogpt(random.Random(2), dtype="bf16", compiled=True, optimizer=False, **tiny)[0], "ckpt"),
        "nanogpt_nobias_views.pt": F_save(make_nanogpt(random.Random(3), bias=False, layouts=True, masks=True, tied=False, **tiny)[0], "ckpt", zip64=True),
        "mingpt.pt": F_save(make_mingpt(random.Random(4), **tiny)[0], "model", variant="torch1"),
        "lecture_f16.pt": F_save(make_lecture(random.Random(5), dtype="f16", **tiny)[0], "archive"),
        "meta_p4.pkl": meta_pkl("\n ab\u00e9\U0001F600", 4),
        "meta_p2.pkl": meta_pkl("xyz", 2),
    }
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


def F_save(obj, folder, **kw):
    return torch_save(obj, folder, **kw)


if __name__ == "__main__":
    # python3 tests/pt_fixture.py DIR: writes the fuzz_pt seed corpus into DIR.
    write_corpus(sys.argv[1])
