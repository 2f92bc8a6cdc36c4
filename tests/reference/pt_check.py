#!/usr/bin/env python3
"""pt_check.py - `gpt convert` of PyTorch training-script checkpoints against the scripts'
own models, with the real torch (issue 21).

The three scripts' model classes are written out below as the scripts define them (nanoGPT
model.py GPT, minGPT mingpt/model.py GPT, the "Let's build GPT" lecture's gpt.py
GPTLanguageModel), with tiny configurations. For each case the script

  1. builds the model, perturbs its parameters (larger weights than the scripts' init, so
     greedy decoding is not a string of near ties), for nanoGPT takes one AdamW step (so the
     checkpoint carries optimizer state), and saves it exactly as the script does:
     nanoGPT's ckpt dict (model, optimizer, model_args, iter_num, best_val_loss, config) to
     out/ckpt.pt with its meta.pkl in data/<dataset>/, the torch.compile'd variant by the
     `_orig_mod.` prefix, f16/bf16 by model.to(dtype), old-torch mask buffers; minGPT's
     state_dict to model.pt with config.json beside it; the lecture's state_dict with its
     input.txt for --char-vocab-from;
  2. runs `BUILD/tools/gpt convert` (from the checkpoint's working directory);
  3. compares the logits of every position of a block_size-token prompt through the public
     API (bindings/python, GPT_LIBRARY=BUILD/lib/libgpt.so; f32 compute) on the CPU and, with
     --device cuda, on the GPU: max |ours - torch| / max |torch| <= 1e-4, torch in float32 on
     the CPU with the weights as saved;
  4. compares greedy text: `gpt generate --tokens ... --temp 0 --context-shift --ignore-eos`
     (CPU, and GPU with --device cuda) with the script's generate() using argmax, for
     2 x block_size + 3 tokens; and for the meta.pkl case also the text path (-p PROMPT);
  5. checks that the legacy format (_use_new_zipfile_serialization=False) is refused with a
     message naming it.

Prints PASS/FAIL per case with the numbers; exit status 1 on any failure.

    python3 tests/reference/pt_check.py build [--device cuda] [--work /tmp/pt_check]

Needs: a build with the converter and dump tools (`ninja -C build`), torch. Runtime: well
under a minute (tiny models; torch import dominates).
"""

import argparse
import collections
import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
from torch.nn import functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ------------------------------------------------------------------ nanoGPT model.py


class NanoConfig:
    def __init__(self, **kw):
        self.block_size, self.vocab_size, self.n_layer, self.n_head, self.n_embd = 8, 23, 2, 2, 16
        self.dropout, self.bias = 0.0, True
        self.__dict__.update(kw)


class NanoLayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class NanoAttention(nn.Module):
    def __init__(self, config, flash=True):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.flash = flash
        if not self.flash:  # torch < 2.0: the mask buffer that appears in old checkpoints
            self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                 .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class NanoMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class NanoBlock(nn.Module):
    def __init__(self, config, flash):
        super().__init__()
        self.ln_1 = NanoLayerNorm(config.n_embd, bias=config.bias)
        self.attn = NanoAttention(config, flash)
        self.ln_2 = NanoLayerNorm(config.n_embd, bias=config.bias)
        self.mlp = NanoMLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self, config, flash=True):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([NanoBlock(config, flash) for _ in range(config.n_layer)]),
            ln_f=NanoLayerNorm(config.n_embd, bias=config.bias)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def all_logits(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    @torch.no_grad()
    def generate_argmax(self, idx, max_new_tokens):
        # generate() with the sampling replaced by argmax
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits = self.all_logits(idx_cond)[:, -1, :]
            idx = torch.cat((idx, logits.argmax(dim=-1, keepdim=True)), dim=1)
        return idx

# ------------------------------------------------------------------ minGPT mingpt/model.py


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MinAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MinBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = MinAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd), c_proj=nn.Linear(4 * n_embd, n_embd), act=NewGELU()))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


class MinGPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([MinBlock(n_embd, n_head, block_size) for _ in range(n_layer)]), ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def all_logits(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long).unsqueeze(0)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    @torch.no_grad()
    def generate_argmax(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits = self.all_logits(idx_cond)[:, -1, :]
            idx = torch.cat((idx, logits.argmax(dim=-1, keepdim=True)), dim=1)
        return idx

# ------------------------------------------------------------------ the lecture's gpt.py


class Head(nn.Module):
    def __init__(self, n_embd, head_size, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        return wei @ self.value(x)


class MultiHeadAttention(nn.Module):
    def __init__(self, n_embd, num_heads, head_size, block_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, head_size, block_size) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)

    def forward(self, x):
        return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))


class FeedFoward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(), nn.Linear(4 * n_embd, n_embd), nn.Dropout(0.0))

    def forward(self, x):
        return self.net(x)


class LectureBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.sa = MultiHeadAttention(n_embd, n_head, n_embd // n_head, block_size)
        self.ffwd = FeedFoward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        return x + self.ffwd(self.ln2(x))


class GPTLanguageModel(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.block_size = block_size
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[LectureBlock(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def all_logits(self, idx):
        B, T = idx.shape
        x = self.token_embedding_table(idx) + self.position_embedding_table(torch.arange(T))
        return self.lm_head(self.ln_f(self.blocks(x)))

    @torch.no_grad()
    def generate_argmax(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.block_size:]
            logits = self.all_logits(idx_cond)[:, -1, :]
            idx = torch.cat((idx, logits.argmax(dim=-1, keepdim=True)), dim=1)
        return idx

# ------------------------------------------------------------------ helpers


def perturb(model, seed):
    """Weights larger than the scripts' init (peaked logits), norm weights around 1, biases non-zero."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            elif "ln" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def text_chars(seed, n=400):
    g = torch.Generator().manual_seed(seed)
    alphabet = "\n !',-.:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyzé—"
    return "".join(alphabet[i] for i in torch.randint(len(alphabet), (n,), generator=g).tolist())


RESULTS = []


def report(case, ok, detail):
    RESULTS.append(ok)
    print("%-4s %-44s %s" % ("PASS" if ok else "FAIL", case, detail), flush=True)


def run(args, cwd=None):
    p = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Checker:
    def __init__(self, build, devices, work):
        self.gpt = os.path.join(build, "tools", "gpt")
        self.devices = devices
        self.work = work
        os.environ["GPT_LIBRARY"] = os.path.join(build, "lib", "libgpt.so")
        sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
        import libgpt
        self.libgpt = libgpt

    def convert(self, case, src, out, extra=(), cwd=None):
        rc, _, err = run([self.gpt, "convert", src, out, "--force", "--quiet"] + list(extra), cwd=cwd)
        if rc != 0:
            report(case + " convert", False, err.strip().replace("\n", " | "))
        return rc == 0

    def logits(self, case, out, model, vocab, block):
        g = torch.Generator().manual_seed(len(case))
        tokens = torch.randint(vocab, (block,), generator=g).tolist()
        with torch.no_grad():
            want = model.float().all_logits(torch.tensor([tokens]))[0]
        scale = want.abs().max().item()
        for dev in self.devices:
            m = self.libgpt.Model(out, device=dev, weight_dtype="f32")
            ctx = m.context(max_seq=block, compute_dtype="f32")
            got = torch.tensor(ctx.forward(tokens, all_logits=True, as_numpy=False))
            err = (got - want).abs().max().item() / scale
            report("%s logits %s" % (case, dev), err <= 1e-4, "max rel err %.2e (max |logit| %.3g)" % (err, scale))
            ctx.close() if hasattr(ctx, "close") else None
            m.close() if hasattr(m, "close") else None

    def greedy(self, case, out, model, prompt, block):
        n = 2 * block + 3
        with torch.no_grad():
            want = model.float().generate_argmax(torch.tensor([prompt]), n)[0, len(prompt):].tolist()
        for dev in self.devices:
            rc, so, err = run([self.gpt, "generate", out, "--tokens", ",".join(map(str, prompt)), "-n", str(n), "--temp", "0",
                               "--context-shift", "--ignore-eos", "--device", dev, "--dtype", "f32"])
            got = [int(t) for t in so.split()] if rc == 0 else []
            same = got == want
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
            report("%s greedy %s" % (case, dev), rc == 0 and same,
                   "%d tokens identical (2 x block_size + 3)" % n if same else "rc %d, first difference at %s: %s" % (rc, first, err.strip()[-200:]))

    def greedy_text(self, case, out, model, chars, prompt_text, block):
        n = 2 * block + 3
        stoi = {c: i for i, c in enumerate(chars)}
        with torch.no_grad():
            ids = model.float().generate_argmax(torch.tensor([[stoi[c] for c in prompt_text]]), n)[0].tolist()
        want = "".join(chars[i] for i in ids) + "\n"
        for dev in self.devices:
            rc, so, err = run([self.gpt, "generate", out, "-p", prompt_text, "-n", str(n), "--temp", "0", "--context-shift",
                               "--ignore-eos", "--device", dev, "--dtype", "f32"])
            report("%s text %s" % (case, dev), rc == 0 and so == want, "%r" % so[:60] if so == want else "got %r want %r %s" % (so, want, err[-200:]))


def nanogpt_case(ck, name, seed, dtype=torch.float32, bias=True, compiled=False, flash=True, legacy=False):
    d = os.path.join(ck.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "out"))
    text = text_chars(seed)
    chars = sorted(set(text))
    os.makedirs(os.path.join(d, "data", "tiny_char"))
    with open(os.path.join(d, "data", "tiny_char", "meta.pkl"), "wb") as f:  # as data/shakespeare_char/prepare.py
        pickle.dump({"vocab_size": len(chars), "itos": {i: ch for i, ch in enumerate(chars)},
                     "stoi": {ch: i for i, ch in enumerate(chars)}}, f)
    model_args = dict(n_layer=2, n_head=2, n_embd=32, block_size=16, bias=bias, vocab_size=len(chars), dropout=0.0)
    torch.manual_seed(seed)
    model = NanoGPT(NanoConfig(**model_args), flash=flash)
    perturb(model, seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
    x = torch.randint(len(chars), (2, 16))
    F.cross_entropy(model.all_logits(x).view(-1, len(chars)), x.view(-1)).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    model.to(dtype)
    sd = model.state_dict()
    if compiled:  # what torch.compile's wrapper's state_dict() names them
        renamed = collections.OrderedDict(("_orig_mod." + k, v) for k, v in sd.items())
        renamed._metadata = collections.OrderedDict(("_orig_mod." + k if k else k, v) for k, v in sd._metadata.items())
        sd = renamed
    checkpoint = {"model": sd, "optimizer": optimizer.state_dict(), "model_args": model_args, "iter_num": 100,
                  "best_val_loss": torch.tensor(1.5), "config": {"dataset": "tiny_char", "compile": compiled, "out_dir": "out"}}
    path = os.path.join(d, "out", "ckpt.pt")
    torch.save(checkpoint, path, **({"_use_new_zipfile_serialization": False} if legacy else {}))
    if legacy:
        rc, _, err = run([ck.gpt, "convert", "out/ckpt.pt", "x.gpt"], cwd=d)
        report(name + " refused", rc == 1 and "legacy" in err, err.strip().replace("\n", " | ")[:120])
        return
    if not ck.convert(name, "out/ckpt.pt", "model.gpt", cwd=d):
        return
    out = os.path.join(d, "model.gpt")
    ck.logits(name, out, model, len(chars), 16)
    ck.greedy(name, out, model, [chars.index(c) for c in text[:5]], 16)
    ck.greedy_text(name, out, model, chars, text[5:12], 16)


def mingpt_case(ck, name, seed, n_layer, n_head, n_embd, model_type=None):
    d = os.path.join(ck.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    text = text_chars(seed)
    chars = sorted(set(text))  # CharDataset
    torch.manual_seed(seed)
    model = MinGPT(len(chars), 16, n_layer, n_head, n_embd)
    perturb(model, seed)
    torch.save(model.state_dict(), os.path.join(d, "model.pt"))  # chargpt.py
    cfg = {"system": {"seed": 3407, "work_dir": d}, "model": {"model_type": model_type,
           "n_layer": None if model_type else n_layer, "n_head": None if model_type else n_head,
           "n_embd": None if model_type else n_embd, "vocab_size": len(chars), "block_size": 16}}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=4)
    with open(os.path.join(d, "input.txt"), "w") as f:
        f.write(text)
    if not ck.convert(name, os.path.join(d, "model.pt"), os.path.join(d, "model.gpt"), ["--char-vocab-from", os.path.join(d, "input.txt")]):
        return
    out = os.path.join(d, "model.gpt")
    ck.logits(name, out, model, len(chars), 16)
    ck.greedy(name, out, model, [chars.index(c) for c in text[:5]], 16)
    ck.greedy_text(name, out, model, chars, text[5:12], 16)


def lecture_case(ck, name, seed, dtype=torch.float32):
    d = os.path.join(ck.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    text = text_chars(seed)
    chars = sorted(list(set(text)))
    torch.manual_seed(seed)
    model = GPTLanguageModel(len(chars), 16, 2, 4, 32)
    perturb(model, seed)
    model.to(dtype)
    torch.save(model.state_dict(), os.path.join(d, "model.pt"))
    with open(os.path.join(d, "input.txt"), "w") as f:
        f.write(text)
    if not ck.convert(name, os.path.join(d, "model.pt"), os.path.join(d, "model.gpt"), ["--char-vocab-from", os.path.join(d, "input.txt")]):
        return
    out = os.path.join(d, "model.gpt")
    ck.logits(name, out, model, len(chars), 16)
    ck.greedy(name, out, model, [chars.index(c) for c in text[:5]], 16)
    ck.greedy_text(name, out, model, chars, text[5:12], 16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cuda: the GPU too")
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="pt_check.")
    os.makedirs(work, exist_ok=True)
    devices = ["cpu"] + (["cuda"] if a.device == "cuda" else [])
    ck = Checker(os.path.abspath(a.build), devices, work)
    print("torch %s; devices %s; work %s" % (torch.__version__, ",".join(devices), work), flush=True)
    nanogpt_case(ck, "nanogpt_f32", 1)
    nanogpt_case(ck, "nanogpt_compiled_nobias_bf16", 2, dtype=torch.bfloat16, bias=False, compiled=True)
    nanogpt_case(ck, "nanogpt_masks_f16", 3, dtype=torch.float16, flash=False)
    nanogpt_case(ck, "nanogpt_legacy_format", 4, legacy=True)
    mingpt_case(ck, "mingpt_n_head", 5, 2, 2, 32)
    mingpt_case(ck, "mingpt_gpt_nano", 6, 3, 3, 48, model_type="gpt-nano")
    lecture_case(ck, "lecture_f32", 7)
    lecture_case(ck, "lecture_bf16", 8, dtype=torch.bfloat16)
    failed = RESULTS.count(False)
    print("%d checks, %d failed" % (len(RESULTS), failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
