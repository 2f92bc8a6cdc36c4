#!/usr/bin/env python3
"""Train libgpt's small demo model: a Llama-architecture model with grouped-query attention
and a byte-level BPE tokenizer, on the King James Bible (tools/train/extract_kjv.sh makes
the corpus). Needs one CUDA GPU, torch, transformers and tokenizers.

    python3 tools/train/train.py --data tools/train/data/kjv.txt.gz --out /tmp/kjv

writes OUT/hf/ (Hugging Face format: fp32 safetensors and the tokenizer; convert it with
`gpt convert OUT/hf kjv-llama.gpt --dtype f16`), OUT/reference.json (the logits and greedy
continuation PyTorch computes for a fixed prompt) and OUT/train_log.json.
Exit status 1 when a self-check failed; everything is written all the same (see the
CHECK FAILED lines and train_log.json's "failed_checks").
"""
import argparse, copy, datetime, gzip, hashlib, json, math, os, platform, sys, time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the corpus helpers work without torch (for a dry run on a machine without it)
    torch = F = None

EOT = "<|endoftext|>"  # BOS, EOS, and the separator before each chapter
PROMPT = "In the beginning God created"
N_GREEDY = 64
FAILED = []  # self-checks that failed


def check(ok, what):
    if not ok:
        FAILED.append(what)
        print(f"CHECK FAILED: {what}", flush=True)
    return ok


def read_chapters(path):
    """The corpus: verses one a line, chapters separated by an empty line. Returns the
    chapters (each ending with a newline) and the sha256 of the uncompressed text."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8").replace("\r\n", "\n")
    chapters = [c.strip("\n") + "\n" for c in text.split("\n\n") if c.strip()]
    if not chapters:
        raise SystemExit(f"{path}: no text")
    return chapters, hashlib.sha256(raw).hexdigest()


def split_val(chapters, frac):
    """The last chapters, at least `frac` of the characters, are the validation set."""
    total, k, n = sum(map(len, chapters)), len(chapters), 0
    while k > 1 and n < frac * total:
        k -= 1
        n += len(chapters[k])
    return chapters[:k], chapters[k:]


def train_tokenizer(chapters, vocab_size):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    # GPT-2's byte-level BPE: the GPT-2 split regex, no prefix space (what libgpt's tokenizer runs).
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(chapters, trainer=trainer, length=len(chapters))
    eot = tok.token_to_id(EOT)
    assert eot is not None, "the special token is missing from the trained vocabulary"
    # Encoding starts with BOS, as in the engine (add_bos).
    tok.post_processor = processors.TemplateProcessing(single=f"{EOT} $A", pair=f"{EOT} $A {EOT} $B",
                                                       special_tokens=[(EOT, eot)])
    return tok, eot


def save_hf_tokenizer(tok, hf_dir, ctx):
    try:
        from transformers import PreTrainedTokenizerFast as Fast
    except ImportError:  # transformers 5 also calls it TokenizersBackend
        from transformers import TokenizersBackend as Fast
    Fast(tokenizer_object=tok, bos_token=EOT, eos_token=EOT, add_bos_token=True, model_max_length=ctx).save_pretrained(hf_dir)
    # Spell out what `gpt convert` and transformers read, whatever this transformers version wrote.
    path = os.path.join(hf_dir, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg.update(bos_token=EOT, eos_token=EOT, add_bos_token=True, add_eos_token=False, model_max_length=ctx)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)


def get_batch(data, batch, seq, gen):
    start = torch.randint(0, data.numel() - seq - 1, (batch,), device=data.device, generator=gen)
    w = data[start[:, None] + torch.arange(seq + 1, device=data.device)]
    return w[:, :-1], w[:, 1:]


def lm_loss(fwd, x, y, amp):
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=amp):
        logits = fwd(input_ids=x, use_cache=False).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))


def evaluate(model, data, seq, batch, amp):
    """Mean loss over the consecutive seq-token windows of data."""
    n = (data.numel() - 1) // seq
    assert n >= 1, f"the validation set ({data.numel()} tokens) is shorter than one window of {seq}"
    x, y = data[: n * seq].view(n, seq), data[1 : n * seq + 1].view(n, seq)
    model.eval()
    with torch.no_grad():
        total = sum(lm_loss(model, x[i : i + batch], y[i : i + batch], amp).item() * len(x[i : i + batch])
                    for i in range(0, n, batch))
    model.train()
    return total / n


def topk(logits, k=5):
    v, i = torch.topk(logits, k)
    return {"ids": i.tolist(), "logits": v.tolist()}


def reference(model, tok, prompt_ids, eot, device):
    """fp32 logits for the prompt and its greedy continuation, computed without and with the
    KV cache (the tokens must agree); `model` is in fp32 and eval mode."""
    with torch.no_grad():
        ids = torch.tensor([prompt_ids], device=device)
        logits = model(input_ids=ids, use_cache=False).logits[0].float()
        seq, greedy, step_logits = list(prompt_ids), [], []
        for _ in range(N_GREEDY):  # no cache: the whole sequence each step
            lg = model(input_ids=torch.tensor([seq], device=device), use_cache=False).logits[0, -1].float()
            step_logits.append(lg)
            greedy.append(int(lg.argmax()))
            seq.append(greedy[-1])
        agree, diff = True, 0.0
        try:  # with the KV cache, fed the same tokens
            out = model(input_ids=ids, use_cache=True)
            for i in range(N_GREEDY):
                lg = out.logits[0, -1].float()
                diff = max(diff, (lg - step_logits[i]).abs().max().item())
                agree = agree and int(lg.argmax()) == greedy[i]
                out = model(input_ids=torch.tensor([[greedy[i]]], device=device), past_key_values=out.past_key_values,
                            use_cache=True)
        except Exception as e:
            print(f"decoding with the KV cache failed: {e!r}")
            agree, diff = False, None
    return {
        "prompt_ids": list(prompt_ids),
        "last_logits": logits[-1].tolist(),
        "top5": [topk(row) for row in logits],
        "greedy_ids": greedy,
        "greedy_text": tok.decode(greedy, skip_special_tokens=False),
        "greedy_first_eos_index": greedy.index(eot) if eot in greedy else None,
        "cache_agrees": agree,
        "cache_max_abs_logit_diff": diff,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="tools/train/data/kjv.txt.gz")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--minutes", type=float, default=4.0, help="wall-clock cap on the training loop")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=6)
    # The shipped model's shape; wider settings train the larger models of docs/VALIDATION.md.
    ap.add_argument("--width", type=int, default=256, help="d_model")
    ap.add_argument("--ffn", type=int, default=688, help="the feed-forward inner width")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (falls back to eager)")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    if torch is None:
        raise SystemExit("train.py needs torch")
    import tokenizers, transformers
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device (use --device cpu for a slow test run)")
    device, amp = torch.device(args.device), args.device == "cuda"
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, "
          f"python {platform.python_version()}, device {torch.cuda.get_device_name(0) if amp else args.device}", flush=True)
    t_start = time.time()
    torch.manual_seed(args.seed)
    hf_dir = os.path.join(args.out, "hf")
    os.makedirs(hf_dir, exist_ok=True)

    # 1. Tokenizer, trained on the training chapters only.
    chapters, corpus_sha = read_chapters(args.data)
    train_ch, val_ch = split_val(chapters, 0.02)
    print(f"corpus: {len(chapters)} chapters, {sum(map(len, chapters))} characters; validation: the last {len(val_ch)} chapters")
    tok, eot = train_tokenizer(train_ch, args.vocab)
    vocab = tok.get_vocab_size()
    check(vocab == args.vocab, f"vocabulary has {vocab} tokens, not {args.vocab}")
    for c in chapters[:3] + val_ch[:1]:  # byte-level BPE must round-trip exactly
        assert tok.decode(tok.encode(c, add_special_tokens=False).ids) == c, "tokenizer does not round-trip the text"
    save_hf_tokenizer(tok, hf_dir, args.seq)
    prompt_ids = tok.encode(PROMPT).ids
    assert prompt_ids[0] == eot and prompt_ids[1:] == tok.encode(PROMPT, add_special_tokens=False).ids

    # 2. Token streams: each chapter starts with <|endoftext|> (= BOS).
    def encode(chs):
        return [t for e in tok.encode_batch(chs, add_special_tokens=True) for t in e.ids]
    train_ids, val_ids = encode(train_ch), encode(val_ch)
    print(f"tokens: train {len(train_ids)}, validation {len(val_ids)} ({sum(map(len, chapters)) / (len(train_ids) + len(val_ids)):.2f} characters a token)")
    train_data = torch.tensor(train_ids, dtype=torch.long, device=device)
    val_data = torch.tensor(val_ids, dtype=torch.long, device=device)

    # 3. Model: Llama with grouped-query attention (by default 8 query heads share 2 key/value heads), untied head.
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=args.width, intermediate_size=args.ffn, num_hidden_layers=args.layers,
                      num_attention_heads=args.heads, num_key_value_heads=args.kv_heads, max_position_embeddings=args.seq,
                      rms_norm_eps=1e-5, hidden_act="silu", tie_word_embeddings=False, attention_bias=False,
                      mlp_bias=False, initializer_range=0.02, bos_token_id=eot, eos_token_id=eot)
    model = LlamaForCausalLM(cfg).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.2f}M parameters, {args.layers} layers, d_model {args.width}, {args.heads} heads / {args.kv_heads} kv heads, vocab {vocab}")

    # 4. Training: AdamW, warmup then cosine decay to 10% over max(steps, minutes), bf16 autocast.
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, **({"fused": True} if amp else {}))
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    fwd, compiled = model, False
    if args.compile:
        try:
            fwd, compiled = torch.compile(model), True
        except Exception as e:
            print(f"torch.compile failed ({e!r}); training eagerly")
    cap = args.minutes * 60
    log, val_log, best = [], [], (float("inf"), 0, None)
    step, acc, t0 = 0, 0.0, time.perf_counter()
    model.train()
    while step < args.steps and time.perf_counter() - t0 < cap:
        progress = max(step / args.steps, (time.perf_counter() - t0) / cap)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(train_data, args.batch, args.seq, gen)
        try:
            loss = lm_loss(fwd, x, y, amp)
            loss.backward()
        except Exception as e:
            if not compiled or step > 0:
                raise
            print(f"torch.compile'd model failed ({e!r}); training eagerly")
            fwd, compiled = model, False
            opt.zero_grad(set_to_none=True)
            loss = lm_loss(fwd, x, y, amp)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        acc += loss.detach()
        if step % 50 == 0 or step == args.steps:
            n = step % 50 or 50
            train_loss = float(acc) / n
            acc = 0.0
            el = time.perf_counter() - t0
            log.append({"step": step, "loss": train_loss, "lr": lr, "seconds": el})
            print(f"step {step:5d}  loss {train_loss:.4f}  lr {lr:.2e}  {el:6.1f}s  "
                  f"{step * args.batch * args.seq / el / 1e3:.0f}k tokens/s", flush=True)
            assert math.isfinite(train_loss), "the training loss is not finite"
        if step % args.eval_every == 0:
            v = evaluate(model, val_data, args.seq, args.batch, amp)
            val_log.append({"step": step, "val_loss": v})
            print(f"step {step:5d}  validation loss {v:.4f}", flush=True)
            if v < best[0]:
                best = (v, step, {k: t.detach().clone() for k, t in model.state_dict().items()})
    train_seconds = time.perf_counter() - t0
    if not val_log or val_log[-1]["step"] != step:
        v = evaluate(model, val_data, args.seq, args.batch, amp)
        val_log.append({"step": step, "val_loss": v})
        if v < best[0]:
            best = (v, step, None)
    if best[2] is not None:
        model.load_state_dict(best[2])
    print(f"trained {step} steps in {train_seconds:.1f}s; keeping step {best[1]} (validation loss {best[0]:.4f})")

    # 5. Save (fp32 safetensors), load back as a user would, and check it is the same model.
    model.eval()
    model.save_pretrained(hf_dir)
    with open(os.path.join(hf_dir, "config.json")) as f:
        saved = json.load(f)
    theta = saved.get("rope_theta", (saved.get("rope_parameters") or {}).get("rope_theta", 10000.0))
    check(saved.get("model_type") == "llama" and saved.get("num_key_value_heads") == args.kv_heads and theta == 10000.0
          and saved.get("tie_word_embeddings", False) is False, f"config.json: {saved}")
    files = sorted(os.listdir(hf_dir))
    print(f"saved {hf_dir}: {', '.join(files)}")
    check(any(f.endswith(".safetensors") for f in files), "no .safetensors file was written")
    loaded = LlamaForCausalLM.from_pretrained(hf_dir).float().to(device).eval()
    try:  # the tokenizer a transformers user gets from the saved directory
        hft = AutoTokenizer.from_pretrained(hf_dir)
        check(hft(PROMPT)["input_ids"] == prompt_ids, f"AutoTokenizer encodes the prompt as {hft(PROMPT)['input_ids']}, not {prompt_ids}")
        check(hft.bos_token_id == eot and hft.eos_token_id == eot, "AutoTokenizer's bos/eos ids")
        check(hft.decode(prompt_ids, skip_special_tokens=True) == PROMPT, "AutoTokenizer does not decode the prompt back")
    except Exception as e:
        check(False, f"AutoTokenizer.from_pretrained({hf_dir}): {e!r}")
    try:
        torch.set_float32_matmul_precision("highest")  # no TF32 for the reference (the default anyway)
    except Exception as e:
        print(f"set_float32_matmul_precision: {e!r}")
    val_fp32 = evaluate(loaded, val_data, args.seq, args.batch, False)
    print(f"validation loss in fp32 (loaded back): {val_fp32:.4f}")

    # 6. Reference logits: fp32 weights, and the weights rounded to fp16 (what `--dtype f16` stores).
    ref = reference(loaded, tok, prompt_ids, eot, device)
    with torch.no_grad():
        mem = model.float()(input_ids=torch.tensor([prompt_ids], device=device), use_cache=False).logits[0, -1]
    save_diff = (mem - torch.tensor(ref["last_logits"], device=device)).abs().max().item()
    check(save_diff < 1e-4, f"the saved model's logits differ from the trained model's by {save_diff}")
    check(ref["cache_agrees"], "greedy decoding with the KV cache differs from decoding without it")
    hf_generate = None
    try:
        g = loaded.generate(torch.tensor([prompt_ids], device=device), max_new_tokens=N_GREEDY, do_sample=False,
                            pad_token_id=eot)[0, len(prompt_ids):].tolist()
        hf_generate = g == ref["greedy_ids"][: len(g)] and len(g) > 0
        check(hf_generate, f"model.generate gives {g}, greedy loop {ref['greedy_ids']}")
    except Exception as e:
        print(f"model.generate failed ({e!r}); not compared")
    m16 = copy.deepcopy(loaded)
    with torch.no_grad():
        for p in m16.parameters():  # parameters only: the rotary inv_freq buffer stays fp32
            p.copy_(p.half().float())
    ref16 = reference(m16, tok, prompt_ids, eot, device)
    check(ref16["cache_agrees"], "fp16 weights: greedy decoding with the KV cache differs from decoding without it")
    print(f"greedy continuation of {PROMPT!r}: {ref['greedy_text']!r}")
    print(f"fp16 weights: {'same' if ref16['greedy_ids'] == ref['greedy_ids'] else 'DIFFERENT'} greedy tokens; "
          f"largest last-position logit change {max(abs(a - b) for a, b in zip(ref['last_logits'], ref16['last_logits'])):.4f}")
    reference_json = {
        "prompt": PROMPT,
        "note": "prompt_ids start with BOS (<|endoftext|>), as the engine adds it; logits are float32 from "
                "transformers' LlamaForCausalLM on the GPU (no TF32); greedy_ids are 64 argmax tokens, not stopped at EOS. "
                "'fp16_weights' is the same computation with every parameter rounded to float16.",
        "bos_id": eot, "eos_id": eot, "vocab_size": vocab,
        **ref, "hf_generate_agrees": hf_generate,
        "fp16_weights": {k: v for k, v in ref16.items() if k != "prompt_ids"},
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(reference_json, f)

    # 7. The log.
    train_log = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "data": os.path.basename(args.data), "data_sha256_uncompressed": corpus_sha,
        "chapters": {"train": len(train_ch), "validation": len(val_ch)},
        "tokens": {"train": len(train_ids), "validation": len(val_ids)},
        "args": vars(args), "parameters": n_params, "config": saved,
        "steps": step, "train_seconds": round(train_seconds, 1), "total_seconds": round(time.time() - t_start, 1),
        "tokens_seen": step * args.batch * args.seq, "epochs": step * args.batch * args.seq / len(train_ids),
        "final_train_loss": log[-1]["loss"] if log else None,
        "kept_step": best[1], "val_loss": best[0], "val_loss_fp32": val_fp32,
        "train_curve": log, "val_curve": val_log, "compiled": compiled,
        "gpu": torch.cuda.get_device_name(0) if amp else str(device),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "tokenizers": tokenizers.__version__},
        "failed_checks": FAILED,
    }
    with open(os.path.join(args.out, "train_log.json"), "w") as f:
        json.dump(train_log, f, indent=1)
    print(f"done in {time.time() - t_start:.0f}s: {args.out}/hf, reference.json, train_log.json")
    if FAILED:
        print(f"{len(FAILED)} self-check(s) FAILED:\n  " + "\n  ".join(FAILED))
        sys.exit(1)


if __name__ == "__main__":
    main()
