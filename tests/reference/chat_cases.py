"""chat_cases - conversations and the comparison loop shared by jinja2_check.py (plain jinja2 in
transformers' configuration, runs in CI) and chat_template_check.py (transformers itself, on the
GPU machine). Our side is tests/chat_template_cli (built by meson in BUILD_DIR/tests)."""
import glob
import json
import os
import random
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEMPLATE_DIR = os.path.join(ROOT, "tests", "data", "chat_templates")
GPT_ERR_INVALID_ARG = -1

# Families whose templates need special tokens the tokenizer has (bos/eos as published).
SPECIALS = {
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama2": ("<s>", "</s>"),
    "mistral_v03": ("<s>", "</s>"),
    "zephyr": ("<s>", "</s>"),
    "gemma": ("<bos>", "<eos>"),
    "phi3": ("<s>", "<|endoftext|>"),
    "phi4_mini": ("<|endoftext|>", "<|endoftext|>"),
    "qwen": (None, "<|im_end|>"),
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "chatml": ("<s>", "<|im_end|>"),
}

TEXTS = [
    "Hello", "How are you?", "", "  padded  ", "line one\nline two\n", "naïve café — ünïcödé", "中文测试，你好！",
    "emoji 🙂🚀", "עברית", "quotes ' and \" and \\ backslash", "{{ not a tag }} {% if x %} {# c #}", "\t tab \r\n crlf",
    "trailing newline\n", "<|im_end|> <s> [INST] fake specials", "1 + 1 = 2", "    ", "a" * 300,
]


def specials_for(name):
    for prefix, pair in SPECIALS.items():
        if name.startswith(prefix):
            return pair
    return ("<s>", "</s>")


def conversations(seed):
    """Fixed edge cases, then random ones: system prompts or not, several turns, non-ASCII,
    quotes, empty messages."""
    rng = random.Random(seed)
    convs = [
        [{"role": "user", "content": "Hello"}],
        [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
         {"role": "user", "content": "Q2"}],
        [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}, {"role": "user", "content": ""}],
        [{"role": "user", "content": "naïve 中文 🙂"}, {"role": "assistant", "content": "quotes ' \" \\"}, {"role": "user", "content": "{{ x }}"}],
        [{"role": "system", "content": ""}, {"role": "user", "content": "  spaced  "}],
        [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
    ]
    for _ in range(40):
        conv = []
        if rng.random() < 0.5:
            conv.append({"role": "system", "content": rng.choice(TEXTS)})
        for k in range(rng.randint(1, 6)):
            conv.append({"role": "user" if k % 2 == 0 else "assistant", "content": rng.choice(TEXTS) + rng.choice(["", " ", rng.choice(TEXTS)])})
        convs.append(conv)
    return convs


def run_ours(cli, template, cases):
    req = json.dumps({"template": template, "cases": cases})
    p = subprocess.run([cli], input=req.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("chat_template_cli failed: " + p.stderr.decode(errors="replace"))
    return json.loads(p.stdout)


def compare(name, template, cases, reference, cli, require_supported):
    """reference(template, case) -> ("ok", text) or ("error", message). Prints one line per
    mismatch and a PASS/FAIL line; returns the number of failures."""
    ours = run_ours(cli, template, cases)
    unsupported = set()
    failures = 0
    agree = 0
    refused = 0
    for case, got in zip(cases, ours):
        kind, want = reference(template, case)
        if kind == "ok" and got["ok"] and got["text"] == want:
            agree += 1
            continue
        if kind == "error" and not got["ok"] and got["status"] != -5:
            agree += 1
            refused += 1  # both refuse (raise_exception, an undefined value, a type error)
            continue
        if not got["ok"] and got["status"] == -5 and not require_supported:
            agree += 1  # a construct we document as unsupported, refused cleanly
            unsupported.add(got["error"])
            continue
        failures += 1
        if failures <= 3:
            print(f"  MISMATCH {name} case {json.dumps(case, ensure_ascii=False)[:300]}")
            print(f"    reference: {kind} {json.dumps(want, ensure_ascii=False)[:400]}")
            print(f"    ours:      {json.dumps(got, ensure_ascii=False)[:400]}")
    note = f" (refused as unsupported: {'; '.join(sorted(unsupported))})" if unsupported else ""
    print(f"{'PASS' if failures == 0 else 'FAIL'} {name}: {agree}/{len(cases)} renderings agree ({refused} refused by both){note}")
    return failures


def family_cases(name, seed):
    bos, eos = specials_for(name)
    cases = []
    for conv in conversations(seed):
        for agp in (False, True):
            c = {"messages": conv, "add_generation_prompt": agp}
            if bos is not None:
                c["bos_token"] = bos
            if eos is not None:
                c["eos_token"] = eos
            cases.append(c)
    return cases


def family_templates():
    return sorted(glob.glob(os.path.join(TEMPLATE_DIR, "*.jinja")))


def find_cli(argv):
    build = argv[1] if len(argv) > 1 else os.path.join(ROOT, "build")
    cli = os.path.join(build, "tests", "chat_template_cli")
    if not os.path.exists(cli):
        sys.exit(f"{cli} is missing: build it with `ninja -C {build} tests/chat_template_cli`")
    return cli
