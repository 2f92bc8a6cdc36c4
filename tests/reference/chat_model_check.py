#!/usr/bin/env python3
"""chat_model_check - `gpt chat` end to end on a converted instruct-style model.

Builds, with transformers and tokenizers and no network, a small Qwen2-shaped model with random
weights and a byte-level BPE tokenizer trained on the project corpus that has ChatML's special
tokens and the Qwen2.5 chat template (tests/data/chat_templates/qwen2.5.jinja) in its
tokenizer_config.json; converts it with `gpt convert`; then

  1. checks the template survived: the converted file renders conversations exactly as
     transformers' apply_chat_template does, and the ids of
     that text tokenized by our library equal transformers' apply_chat_template(tokenize=True)
     (through the Python binding over BUILD/lib/libgpt.so);
  2. runs `gpt chat --verbose` with N piped turns (greedy, 24 tokens per answer) on the CPU and
     on CUDA and prints each turn's tokens run, tokens reused and time, so the cache reuse
     shows: the tokens run per turn stay the size of the new message, not of the history;
  3. runs tests/test_cli.py Chat.test_template_chat on the converted file.

    python3 tests/reference/chat_model_check.py BUILD_DIR OUT_DIR [--turns N] [--device cuda]

Exits 1 on any failed check."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

try:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TURN = re.compile(r"gpt: turn (\d+): conversation (\d+) tokens, (\d+) reused from the cache, (\d+) run;(.*)")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_model(out):
    corpus = os.path.join(REPO, "tests", "data", "tokenizer_corpus.txt")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    template = open(os.path.join(REPO, "tests", "data", "chat_templates", "qwen2.5.jinja"), encoding="utf-8").read()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = template
    fast.save_pretrained(out)
    im_end = tok.token_to_id("<|im_end|>")
    torch.manual_seed(0)
    cfg = Qwen2Config(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=512, vocab_size=tok.get_vocab_size(), max_position_embeddings=4096,
                      tie_word_embeddings=True, eos_token_id=im_end, bos_token_id=None)
    model = Qwen2ForCausalLM(cfg).eval()
    model.save_pretrained(out, safe_serialization=True)
    return fast


def check_rendering(build, gptfile, fast):
    # Through the public API (the Python binding over BUILD's libgpt.so).
    os.environ.setdefault("GPT_LIBRARY", os.path.join(build, "lib", "libgpt.so"))
    sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
    import libgpt
    model = libgpt.Model(gptfile, device="cpu")
    convs = [
        [{"role": "user", "content": "Hello!"}],
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Grüße, \"quotes\" & ünïcödé"},
         {"role": "assistant", "content": "Hi."}, {"role": "user", "content": ""}],
    ]
    ok = True
    for conv in convs:
        for gen in (False, True):
            want = fast.apply_chat_template(conv, tokenize=False, add_generation_prompt=gen)
            got = model.chat_template(conv, add_generation_prompt=gen)
            ids_want = fast.apply_chat_template(conv, tokenize=True, add_generation_prompt=gen)
            if not isinstance(ids_want, list):  # a BatchEncoding in transformers 5
                ids_want = ids_want["input_ids"]
            ids_got = list(model.tokenize(got, add_bos=False, parse_special=True))
            same = got == want and ids_got == list(ids_want)
            ok &= same
            print(f"{'OK  ' if same else 'FAIL'} render + tokenize {len(conv)} messages, generation prompt {gen}"
                  + ("" if same else f"\n got {got!r}\nwant {want!r}\n ids {ids_got}\nwant {list(ids_want)}"))
    return ok


def chat_turns(gpt, gptfile, device, turns):
    lines = [f"Message number {i}: tell me about the {['sea', 'land', 'sky', 'city'][i % 4]}." for i in range(turns)]
    t0 = time.time()
    r = subprocess.run([gpt, "chat", gptfile, "--verbose", "--temp", "0", "-n", "24", "--device", device,
                        "--max-seq", "4096"], input=("\n".join(lines) + "\n").encode(), capture_output=True, timeout=600)
    err = r.stderr.decode("utf-8", "replace")
    rows = TURN.findall(err)
    print(f"gpt chat on {device}: rc {r.returncode}, {len(rows)} turns in {time.time() - t0:.1f} s")
    for number, total, reused, ran, rest in rows:
        print(f"  turn {number:>2}: conversation {total:>5} tokens, reused {reused:>5}, run {ran:>3};{rest}")
    ok = r.returncode == 0 and len(rows) == turns
    # A turn runs its new message and the template's markers, plus the previous answer from
    # where its re-tokenized text departs from the sampled tokens (random weights sample
    # non-canonical token sequences): never the history before it.
    # So the tokens run per turn stay bounded (new message + previous answer + markers) while
    # the conversation grows: the last turns run no more than the early ones.
    runs = [int(ran) for _, _, _, ran, _ in rows[1:]]
    ok &= bool(runs) and max(runs) <= 2 * 24 + 100 and max(runs[-4:]) <= max(runs[:4])
    if not ok:
        print(err[-2000:])
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--turns", type=int, default=16)
    ap.add_argument("--device", action="append", default=[])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    hf = os.path.join(a.out, "hf")
    fast = build_model(hf)
    gpt = os.path.join(a.build, "tools", "gpt")
    gptfile = os.path.join(a.out, "chat-model.gpt")
    r = subprocess.run([gpt, "convert", hf, gptfile, "--dtype", "f32", "--force"], capture_output=True, text=True)
    print(f"convert rc {r.returncode}: {(r.stdout + r.stderr).strip()[-400:]}")
    if r.returncode:
        return 1
    ok = check_rendering(a.build, gptfile, fast)
    for dev in (a.device or ["cpu"]):
        ok &= chat_turns(gpt, gptfile, dev, a.turns)
    env = dict(os.environ, GPT_TEST_CHAT_MODEL=gptfile)
    r = subprocess.run([sys.executable, os.path.join(REPO, "tests", "test_cli.py"), gpt, "Chat.test_template_chat"],
                       capture_output=True, text=True, env=env)
    print(f"test_cli Chat.test_template_chat rc {r.returncode}: {r.stderr.strip()[-300:]}")
    ok &= r.returncode == 0
    print("ALL OK" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
