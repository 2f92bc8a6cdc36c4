#!/usr/bin/env python3
"""compare_nanogpt.py - libgpt's `gpt generate` against nanoGPT's own sample.py loop, in one run
on one GPU (issue 21's speed line: >= 20x inside the context, >= 5x over 1,000 tokens with
--context-shift).

Run on the GPU machine from the repository root, after building with CUDA:

    python3 bench/compare_nanogpt.py --gpt build/tools/gpt [--out results.json] [--quick]

Shapes (the same as `gpt bench --synthetic NAME`):
  nanogpt-shakespeare-char  nanoGPT's config/train_shakespeare_char.py: 6 layers, 6 heads, 384
                            wide, block_size 256, 65 characters, bias=False (train.py's default)
  char-dense-768            the founding document's dense character model: 12 layers, 8 heads,
                            768 wide, 95 characters; block_size 256 (chosen: the document gives none)

For each shape the script builds nanoGPT's GPT (model.py, written out below: flash attention
through F.scaled_dot_product_attention, nn.GELU(), LayerNorm with optional bias, wte tied to
lm_head, nanoGPT's init) with random weights, on CUDA, and times model.generate() the way
sample.py runs it: torch.no_grad(), under `ctx` = torch.amp.autocast('cuda', dtype) (bfloat16,
sample.py's choice on a GPU that supports it, and float32, where sample.py's autocast does
nothing), TF32 matmuls allowed as sample.py allows them, from a 1-token prompt ("\n", id 0):
  inside  block_size - 1 new tokens (the context never overflows);
  past    --long (1,000) new tokens (generate() crops to the last block_size tokens).
Mode "sampled" is sample.py's settings (temperature 0.8, top_k 200, multinomial); "greedy" is
the same loop with argmax in place of top-k/softmax/multinomial (nanoGPT has no greedy switch).
Each timing: one warm-up generate() of 32 tokens, then --reps runs, median; host clock around
each run with torch.cuda.synchronize() before and after.

Then it saves the model as train.py does (the fp32 state_dict of the CUDA model, with the
`_orig_mod.` prefix of a compiled model, model_args, config, iter_num, best_val_loss; no optimizer state) to
out/ckpt.pt with data/<dataset>/meta.pkl (stoi/itos), converts it with `gpt convert
out/ckpt.pt model.gpt` from that folder, and times `gpt generate model.gpt --tokens 0 -n N
--device cuda --dtype D --ignore-eos [--context-shift]` (greedy: --temp 0; sampled: --temp 0.8
--top-k 200). Ours tok/s = generated tokens / (time of the whole gpt_generate call: the prompt,
the first token and the rest, from the tool's own stderr report), i.e. model loading excluded
(the tool's own tokens/s, the tokens after the first, is printed and saved beside it);
one warm-up process per shape and dtype, then --reps processes, median. nanoGPT's float32
uses TF32 matmuls as sample.py allows them; dtype "tf32" compares it with ours under
`--dtype f32 --tf32` (the same allowance), dtype "f32" with our strict FP32.
If `gpt convert` cannot read the checkpoint (a build without the .pt reader) the "inside" rows
fall back to `gpt bench --synthetic NAME` decode (greedy steps through the API) and the
"past" rows say n/a.

Prints one table (shape, dtype, mode, span, nanoGPT tok/s, ours tok/s, ratio, target, met) and,
with --out, writes every number as JSON. Runtime on an H200: about 2 minutes (--quick: bf16
only, 1 repetition, well under a minute).
"""
import argparse
import json
import math
import os
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

SHAPES = {
    # name: (n_layer, n_head, n_embd, block_size, bias, dataset, characters)
    "nanogpt-shakespeare-char": (6, 6, 384, 256, False, "shakespeare_char",
                                 "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
    "char-dense-768": (12, 8, 768, 256, False, "char95", "\n" + "".join(chr(c) for c in range(32, 126))),
}
# "tf32": nanoGPT's f32 (autocast float32, TF32 matmuls as sample.py allows them) against ours
# with `--dtype f32 --tf32`; "f32" against our strict FP32.
TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "tf32": "float32"}
SAMPLED_TEMPERATURE, SAMPLED_TOP_K = 0.8, 200  # sample.py's defaults
TARGETS = {"inside": 20.0, "past": 5.0}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpt", required=True, help="path to the built gpt tool (e.g. build/tools/gpt)")
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated, from: " + ", ".join(SHAPES))
    p.add_argument("--dtypes", default="bf16,tf32,f32", help="comma-separated, from: bf16, f16, tf32, f32")
    p.add_argument("--modes", default="greedy,sampled", help="comma-separated, from: greedy, sampled")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions of every case (median reported)")
    p.add_argument("--long", type=int, default=1000, help="tokens of the past-the-context case")
    p.add_argument("--quick", action="store_true", help="bf16 only, 1 repetition")
    p.add_argument("--work", help="folder for checkpoints and converted files (default: a temporary one)")
    p.add_argument("--out", help="write all numbers to this JSON file")
    a = p.parse_args()
    a.shapes = [s for s in a.shapes.split(",") if s]
    a.dtypes = [d for d in a.dtypes.split(",") if d]
    a.modes = [m for m in a.modes.split(",") if m]
    for s in a.shapes:
        if s not in SHAPES:
            p.error("unknown shape '%s' (known: %s)" % (s, ", ".join(SHAPES)))
    for d in a.dtypes:
        if d not in TORCH_DTYPES:
            p.error("unknown dtype '%s' (bf16, f16, tf32, f32)" % d)
    for m in a.modes:
        if m not in ("greedy", "sampled"):
            p.error("unknown mode '%s' (greedy, sampled)" % m)
    if a.quick:
        a.dtypes, a.reps = ["bf16"], 1
    if a.reps < 1 or a.long < 1:
        p.error("--reps and --long must be at least 1")
    if not os.access(a.gpt, os.X_OK):
        p.error("--gpt %s is not an executable" % a.gpt)
    return a


ARGS = parse_args()  # before importing torch: --help and argument errors need no torch

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

# ------------------------------------------------------------------ nanoGPT model.py


class GPTConfig:
    def __init__(self, block_size, vocab_size, n_layer, n_head, n_embd, dropout, bias):
        self.block_size, self.vocab_size = block_size, vocab_size
        self.n_layer, self.n_head, self.n_embd = n_layer, n_head, n_embd
        self.dropout, self.bias = dropout, bias


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has no bias=False before 2.1)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):  # inference only: logits of the last position, as with targets=None
        b, t = idx.size()
        assert t <= self.config.block_size
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        return self.lm_head(x[:, [-1], :]), None

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, greedy=False):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            if greedy:  # not in nanoGPT: argmax instead of the three sampling steps below
                idx_next = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            else:
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# ------------------------------------------------------------------ nanoGPT timing


def time_nanogpt(model, dtype, mode, n_new, reps):
    """Median tokens/s of sample.py's loop: generate() under no_grad and autocast."""
    ctx = torch.amp.autocast(device_type="cuda", dtype=getattr(torch, TORCH_DTYPES[dtype]))
    kw = dict(greedy=True) if mode == "greedy" else dict(temperature=SAMPLED_TEMPERATURE, top_k=SAMPLED_TOP_K)
    x = torch.zeros((1, 1), dtype=torch.long, device="cuda")  # start = "\n", id 0
    rates = []
    with torch.no_grad(), ctx:
        model.generate(x, 32, **kw)  # warm-up
        for _ in range(reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            y = model.generate(x, n_new, **kw)
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            assert y.size(1) == 1 + n_new
            rates.append(n_new / dt)
    return statistics.median(rates)


# ------------------------------------------------------------------ checkpoint as train.py saves it


def save_checkpoint(model, name, folder):
    n_layer, n_head, n_embd, block, bias, dataset, chars = SHAPES[name]
    os.makedirs(os.path.join(folder, "out"), exist_ok=True)
    os.makedirs(os.path.join(folder, "data", dataset), exist_ok=True)
    model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block, bias=bias,
                      vocab_size=len(chars), dropout=0.2)
    # train.py compiles by default, so its state_dict keys carry torch.compile's prefix; it saves
    # the fp32 model's tensors from the GPU as they are (wte and lm_head share one storage).
    state = {"_orig_mod." + k: v for k, v in model.state_dict().items()}
    checkpoint = {"model": state, "model_args": model_args, "iter_num": 5000,
                  "best_val_loss": torch.tensor(1.4697),
                  "config": dict(dataset=dataset, block_size=block, n_layer=n_layer, n_head=n_head, n_embd=n_embd,
                                 dropout=0.2, bias=bias, compile=True)}
    torch.save(checkpoint, os.path.join(folder, "out", "ckpt.pt"))
    meta = {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}
    with open(os.path.join(folder, "data", dataset, "meta.pkl"), "wb") as f:  # as data/*/prepare.py
        pickle.dump(meta, f)


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    return p.returncode, p.stdout, p.stderr


# ------------------------------------------------------------------ our timing

REPORT = re.compile(r"prompt (\d+) tokens \+ first token in ([0-9.]+) ms \(load ([0-9.]+) ms\);"
                    r"(?: (\d+) tokens in ([0-9.]+) ms)?")


def ours_dtype_args(dtype):
    """The gpt tool's options for one of TORCH_DTYPES' names ("tf32": f32 with TF32 allowed)."""
    return ["--dtype", "f32", "--tf32"] if dtype == "tf32" else ["--dtype", dtype]


def ours_generate_once(gpt, model_file, dtype, mode, n_new, shift):
    cmd = [os.path.abspath(gpt), "generate", model_file, "--tokens", "0", "-n", str(n_new), "--device", "cuda",
           "--ignore-eos", "--no-verify"] + ours_dtype_args(dtype)
    cmd += ["--temp", "0"] if mode == "greedy" else ["--temp", str(SAMPLED_TEMPERATURE), "--top-k", str(SAMPLED_TOP_K),
                                                     "--seed", "1337"]
    if shift:
        cmd.append("--context-shift")
    rc, out, err = run(cmd)
    m = REPORT.search(err)
    if rc != 0 or not m:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd), rc, err.strip()[-400:]))
    first_ms = float(m.group(2))
    rest_n = int(m.group(4) or 0)
    rest_ms = float(m.group(5) or 0)
    n_out = rest_n + 1
    if n_out != n_new:  # (the text itself is random characters: the tool's count is the check)
        raise RuntimeError("%s: %d tokens generated, %d asked for" % (" ".join(cmd), n_out, n_new))
    # The whole call, and the tool's own rate (the tokens after the first).
    return n_out / ((first_ms + rest_ms) / 1e3), rest_n / (rest_ms / 1e3) if rest_ms > 0 else 0.0


def ours_generate(gpt, model_file, dtype, mode, n_new, shift, reps):
    runs = [ours_generate_once(gpt, model_file, dtype, mode, n_new, shift) for _ in range(reps)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def ours_bench_decode(gpt, name, dtype, n_new, reps):
    """Fallback without the .pt reader: decode steps of `gpt bench --synthetic` (greedy, no sampling)."""
    cmd = [os.path.abspath(gpt), "bench", "--synthetic", name, "--device", "cuda", "--prefill", "0", "--decode",
           str(min(n_new, 200)), "--warmup", "3", "--reps", str(reps), "--json"] + ours_dtype_args(dtype)
    rc, out, err = run(cmd)
    if rc != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd), rc, err.strip()[-400:]))
    return json.loads(out)["decode"]["tokens_per_s"]


# ------------------------------------------------------------------ main


def main():
    a = ARGS
    warnings.filterwarnings("ignore", message=".*autocast.*")  # float32 autocast: sample.py's ctx, a no-op
    if not torch.cuda.is_available():
        sys.exit("compare_nanogpt.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = True  # as sample.py
    torch.backends.cudnn.allow_tf32 = True
    work = a.work or tempfile.mkdtemp(prefix="compare_nanogpt.")
    print("GPU %s, torch %s, work folder %s" % (torch.cuda.get_device_name(0), torch.__version__, work), flush=True)
    t_start = time.time()
    rows = []
    for name in a.shapes:
        n_layer, n_head, n_embd, block, bias, dataset, chars = SHAPES[name]
        torch.manual_seed(1337)
        model = GPT(GPTConfig(block, len(chars), n_layer, n_head, n_embd, 0.2, bias)).to("cuda").eval()
        spans = {"inside": block - 1, "past": a.long}
        ref = {}
        for dtype in a.dtypes:
            for mode in a.modes:
                for span, n_new in spans.items():
                    ref[dtype, mode, span] = time_nanogpt(model, dtype, mode, n_new, a.reps)
                    print("  nanoGPT %s %s %s %s: %.1f tok/s" % (name, dtype, mode, span, ref[dtype, mode, span]),
                          flush=True)
        folder = os.path.join(work, name)
        save_checkpoint(model, name, folder)
        del model
        torch.cuda.empty_cache()
        rc, _, err = run([os.path.abspath(a.gpt), "convert", "out/ckpt.pt", "model.gpt", "--force", "--quiet"], cwd=folder)
        converted = rc == 0
        if not converted:
            print("  gpt convert failed (exit %d), falling back to gpt bench --synthetic: %s" % (rc, err.strip()[-300:]),
                  flush=True)
        model_file = os.path.join(folder, "model.gpt")
        for dtype in a.dtypes:
            if converted:  # warm-up process: driver, page cache
                ours_generate_once(a.gpt, model_file, dtype, "greedy", 8, False)
            for mode in a.modes:
                for span, n_new in spans.items():
                    steady = None
                    if converted:
                        ours, steady = ours_generate(a.gpt, model_file, dtype, mode, n_new, span != "inside", a.reps)
                        how = "generate"
                    elif span == "inside":
                        ours, how = ours_bench_decode(a.gpt, name, dtype, n_new, a.reps), "bench decode"
                    else:
                        ours, how = None, "n/a"
                    nano = ref[dtype, mode, span]
                    rows.append(dict(shape=name, dtype=dtype, mode=mode, span=span, tokens=n_new, nanogpt_tok_s=nano,
                                     ours_tok_s=ours, ours_after_first_tok_s=steady, ours_from=how,
                                     ratio=ours / nano if ours else None,
                                     target=TARGETS[span]))
                    print("  ours    %s %s %s %s: %s tok/s (%s%s)" % (
                        name, dtype, mode, span, "%.1f" % ours if ours else "n/a", how,
                        "; %.1f tok/s after the first token, the tool's own report" % steady if steady else ""), flush=True)

    print("\n| shape | dtype | mode | tokens | nanoGPT tok/s | ours tok/s | ratio | target | met |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        span = "%d inside the context" % r["tokens"] if r["span"] == "inside" else "%d, context shift" % r["tokens"]
        ours = "%.1f" % r["ours_tok_s"] if r["ours_tok_s"] else "n/a"
        if r["ours_from"] == "bench decode":
            ours += " (bench decode)"
        ratio = "%.1fx" % r["ratio"] if r["ratio"] else "n/a"
        met = "n/a" if not r["ratio"] else ("**yes**" if r["ratio"] >= r["target"] else "no")
        print("| %s | %s | %s | %s | %.1f | %s | %s | %gx | %s |" % (r["shape"], r["dtype"], r["mode"], span,
                                                                     r["nanogpt_tok_s"], ours, ratio, r["target"], met))
    print("\nnanoGPT: generate() under no_grad + autocast as sample.py, median of %d after a warm-up; ours: "
          "tokens / whole gpt_generate call (load excluded), median of %d processes; %.0f s in all"
          % (a.reps, a.reps, time.time() - t_start))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(gpu=torch.cuda.get_device_name(0), torch=torch.__version__, reps=a.reps, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
