#!/usr/bin/env python3
"""chat_template_check - our chat-template renderer against transformers' own
apply_chat_template(messages, tokenize=False, add_generation_prompt=...) on every family
template in tests/data/chat_templates: conversations with system prompts, several turns,
non-ASCII text, quotes and empty messages, with and without add_generation_prompt
(chat_cases.py draws them). Runs offline: the tokenizer is a throwaway PreTrainedTokenizerFast
whose only job is to carry the template and the bos/eos tokens.

    python3 tests/reference/chat_template_check.py [BUILD_DIR]

Needs transformers + tokenizers (and jinja2, which transformers uses) and
BUILD_DIR/tests/chat_template_cli (`ninja -C build tests/chat_template_cli`; a CPU build is
enough). Prints PASS/FAIL per template with the count of renderings that agree; exits 1 on
any mismatch. Takes a few seconds."""
import sys

import chat_cases

try:
    import transformers
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)


def make_tokenizer(template, bos, eos):
    vocab = {"<unk>": 0}
    for t in (bos, eos):
        if t is not None and t not in vocab:
            vocab[t] = len(vocab)
    kwargs = {}
    if bos is not None:
        kwargs["bos_token"] = bos
    if eos is not None:
        kwargs["eos_token"] = eos
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="<unk>")), **kwargs)
    tok.chat_template = template
    return tok


_cache = {}


def reference(template, case):
    key = (template, case.get("bos_token"), case.get("eos_token"))
    if key not in _cache:
        _cache[key] = make_tokenizer(template, case.get("bos_token"), case.get("eos_token"))
    tok = _cache[key]
    try:
        text = tok.apply_chat_template(case["messages"], tokenize=False, add_generation_prompt=case["add_generation_prompt"])
        return ("ok", text)
    except Exception as e:  # a template error (raise_exception, undefined value): ours must refuse too
        return ("error", f"{type(e).__name__}: {e}")


def main():
    cli = chat_cases.find_cli(sys.argv)
    print(f"transformers {transformers.__version__}")
    failures = 0
    for path in chat_cases.family_templates():
        name = path.rsplit("/", 1)[-1][:-len(".jinja")]
        with open(path, encoding="utf-8") as f:
            template = f.read()
        failures += chat_cases.compare(name, template, chat_cases.family_cases(name, 11), reference, cli, require_supported=True)
    print("ALL PASS" if failures == 0 else f"{failures} FAILURES")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
