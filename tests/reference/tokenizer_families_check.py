#!/usr/bin/env python3
"""tokenizer_families_check.py - libgpt's tokenizer against Hugging Face `tokenizers` for the
tokenizer.json configuration of each model family issue #18 names. Needs Python `tokenizers`
(>= 0.19) and nothing from the network: each tokenizer is trained here on this repository's
text with the family's exact normalizer / pre-tokenizer / decoder / model flags / added
tokens, saved as tokenizer.json, converted by our importer (through tests/tokenize_cli) and
compared id for id (and decoded text) on
  * the project corpus tests/data/tokenizer_corpus.txt, and
  * an extra corpus written here: digit runs, whitespace runs, non-ASCII, case changes,
    every family's special tokens with the spacing around them, and 400 random strings.

Families (what their published tokenizer.json holds, reproduced here):
  llama3       Split(Llama-3 regex) + ByteLevel, ignore_merges, BOS template
  qwen25       NFC normalizer + Split(Qwen2 regex, single digits) + ByteLevel, ChatML tokens
  phi3         Llama-2 legacy SPM: Prepend + Replace normalizer, byte fallback, Strip decoder,
               chat tokens <|user|> <|assistant|> <|end|> ... with rstrip=true
  phi4mini     Split(o200k regex) + ByteLevel
  gemma        Replace(" ", "▁") normalizer, Split(" ", MergedWithPrevious), byte fallback,
               decoder without Strip (no space prefix), <start_of_turn>/<end_of_turn>,
               user-defined non-special added tokens
  smollm2      Digits(individual_digits=true) + ByteLevel(use_regex=true)
  mistral_v03  Metaspace(prepend_scheme="first", split=false), Llama decoder, control tokens
               [INST] [/INST] [TOOL_CALLS] ... (transformers' non-legacy conversion)
  mistral_legacy  the same vocabulary with the legacy Prepend normalizer

How to run (from the repository root; about 1 minute):
    meson setup build -Dcuda=disabled && ninja -C build tests/tokenize_cli
    python3 tests/reference/tokenizer_families_check.py [--cli build/tests/tokenize_cli] [--out /tmp/tokfam]
        [--hf-tokenizer path/to/real/tokenizer.json ...]
Prints OK/FAIL per family and corpus with the counts, the first mismatches in full, and
"ALL EXACT" or "MISMATCHES FOUND"; exit status 0 only when everything matched.
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_check as tc  # noqa: E402  (the corpus reader, our CLI runner, the report)

SP = "\u2581"
O200K_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                 r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                 r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CHATML = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PHI3_CHAT = ["<|assistant|>", "<|end|>", "<|user|>", "<|system|>"]
MISTRAL_CONTROL = ["[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]"]


# ---------------------------------------------------------------- the extra corpus

def extra_cases():
    cases = []
    # digit runs, alone and among words, ASCII and beyond (Nd, No)
    for n in range(1, 14):
        cases.append("1234567890123"[:n])
    cases += ["x 12", "abc123def456", " 123 456 7890", "3.14159", "1,000,000", "$1234.50", "2024-06-01T12:34:56",
              "٣٤٥ ٦", "½ ² ⅷ", "007 0 00", "a1b2c3", "Phone: +1 (555) 123-4567"]
    # whitespace runs
    cases += ["a  b", "a   b", "   ", " ", "\t\t x", "\n\n\n", " \n \n x", "x   ", "   x", "a\r\nb", "a \t\n b",
              "line1\n\n\n   line2", "\u3000x\u00a0y", "  leading and trailing  "]
    # non-ASCII and case changes
    cases += ["Größe naïve café", "cafe\u0301 nai\u0308ve \u1100\u1161\u11a8 e\u0323\u0302 \u212b", "Привет мир", "東京タワーと你好世界", "😀👍🏽🇺🇸", "e\u0301 combining", "ǅungla Ǆ",
              "helloWorld JSONParser getHTTPResponse", "DON'T I'M we'LL", "don't it's", "x//\ny", "https://a.b/c/d?e=f",
              "ΑΒΓ αβγ", "𝔘𝔫𝔦", "İstanbul ß ẞ", "\u2581already\u2581marked", "tab\tsep\tvalues"]
    # every family's special tokens with spaces and newlines around them
    cases += ["<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
              "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n4<|end|>",
              "<|user|>  spaced  <|end|>  \n\n<|assistant|>",
              "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
              " <start_of_turn> x <end_of_turn> ",
              "[INST] hello [/INST] hi</s>[INST]again[/INST]",
              "<s>[INST] x [/INST]", "text<|endoftext|>more", "<h1>Title</h1> <|begin_of_text|>x",
              "<bos><start_of_turn>", "a<|end|>b", "<|end|>"]
    rng = random.Random(18)
    pieces = ["a", "Z", "hello", "World", " ", "  ", "\n", "\t", "1", "42", "٣", "é", "e\u0301", "東", "😀", ".", "'s",
              "'T", "/", "-", "<|end|>", "<|user|>", "<start_of_turn>", "[INST]", "<|im_end|>", SP, "ǅ", "\u00a0"]
    for _ in range(400):
        s = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        cases.append(s)
    return cases


def escape_case(s):
    out = []
    for i, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or ord(c) == 0x7F or (i == 0 and c == "#"):
            out.append("\\u{%X}" % ord(c))
        else:
            out.append(c)
    return "".join(out)


def write_corpus(path, cases):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# tokenizer_families_check.py's extra corpus (generated)\n")
        for c in cases:
            f.write(escape_case(c) + "\n")


# ---------------------------------------------------------------- families

def added_token(content, tid, special=True, rstrip=False, lstrip=False):
    return {"id": tid, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": False, "special": special}


def bos_template(bos, bos_id):
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}


def byte_level_family(pre_tokenizer_json, specials, normalizer=None, ignore_merges=False, bos=None):
    """Trains a byte-level BPE with this pre-tokenizer (so merges respect its splits)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    base = json.loads(Tokenizer(models.BPE()).to_str())
    base["pre_tokenizer"] = pre_tokenizer_json
    base["normalizer"] = normalizer
    tok = Tokenizer.from_str(json.dumps(base))
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(tc.training_text(), trainer)
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = ignore_merges
    if bos:
        j["post_processor"] = bos_template(bos, tok.token_to_id(bos))
    return j


def split_regex(pattern):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


_SPM_TRAINED = []


def spm_base(extra_pieces):
    """tokenizer_check's Llama-2-style SentencePiece BPE (<unk> <s> </s>, 256 byte tokens, the
    trained pieces; trained once), plus whitespace-run pieces as Gemma's vocabulary has them."""
    if not _SPM_TRAINED:
        _SPM_TRAINED.append(tc.train_spm()[0])
    j = json.loads(json.dumps(_SPM_TRAINED[0]))
    vocab = j["model"]["vocab"]
    merges = j["model"]["merges"]
    for left, right in extra_pieces:
        if left in vocab and right in vocab and left + right not in vocab:
            vocab[left + right] = len(vocab)
            merges.append(left + " " + right)
    return j


def add_tokens(j, contents, **flags):
    """Appends added tokens after the vocabulary (or reuses a vocabulary id)."""
    vocab = j["model"]["vocab"]
    for c in contents:
        special = flags.get("special", True)
        if c in vocab:
            tid = vocab[c]
        else:
            tid = max(max(vocab.values()), max([a["id"] for a in j["added_tokens"]] or [0])) + 1
            vocab[c] = tid
        j["added_tokens"] = [a for a in j["added_tokens"] if a["content"] != c]
        j["added_tokens"].append(added_token(c, tid, special, flags.get("rstrip", False), flags.get("lstrip", False)))
    return j


def spm_decoder(strip):
    d = [{"type": "Replace", "pattern": {"String": SP}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]
    if strip:
        d.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": d}


def llama_normalizer():
    return {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SP},
                                                {"type": "Replace", "pattern": {"String": " "}, "content": SP}]}


def families():
    fam = {}
    fam["llama3"] = byte_level_family({"type": "Sequence", "pretokenizers": [split_regex(tc.LLAMA3_PATTERN), byte_level(False)]},
                                      ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"], ignore_merges=True,
                                      bos="<|begin_of_text|>")
    fam["qwen25"] = byte_level_family({"type": "Sequence", "pretokenizers": [split_regex(tc.QWEN2_PATTERN), byte_level(False)]},
                                      CHATML, normalizer={"type": "NFC"})
    fam["phi4mini"] = byte_level_family({"type": "Sequence", "pretokenizers": [split_regex(O200K_PATTERN), byte_level(False)]},
                                        ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"])
    fam["smollm2"] = byte_level_family({"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, byte_level(True)]}, CHATML)

    ws = [(SP, SP), (SP + SP, SP + SP)]
    phi3 = spm_base(ws)
    phi3["normalizer"] = llama_normalizer()
    phi3["pre_tokenizer"] = None
    phi3["decoder"] = spm_decoder(True)
    add_tokens(phi3, ["<|endoftext|>"])
    add_tokens(phi3, PHI3_CHAT, rstrip=True)
    fam["phi3"] = phi3

    gemma = spm_base(ws)
    gemma["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": SP}
    gemma["pre_tokenizer"] = {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False}
    gemma["decoder"] = spm_decoder(False)
    add_tokens(gemma, ["<pad>", "<eos>", "<bos>", "<mask>", "<start_of_turn>", "<end_of_turn>"])
    add_tokens(gemma, ["<h1>", "</h1>", "<table>"], special=False)
    gemma["post_processor"] = bos_template("<bos>", gemma["model"]["vocab"]["<bos>"])
    fam["gemma"] = gemma

    mistral = spm_base(ws)
    mistral["normalizer"] = None
    mistral["pre_tokenizer"] = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "first", "split": False}
    mistral["decoder"] = spm_decoder(True)
    add_tokens(mistral, MISTRAL_CONTROL)
    fam["mistral_v03"] = mistral
    legacy = json.loads(json.dumps(mistral))
    legacy["normalizer"] = llama_normalizer()
    legacy["pre_tokenizer"] = None
    fam["mistral_legacy"] = legacy
    return fam


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(tc.REPO, "build", "tests", "tokenize_cli"))
    ap.add_argument("--corpus", default=os.path.join(tc.REPO, "tests", "data", "tokenizer_corpus.txt"))
    ap.add_argument("--out", default="/tmp/tokenizer_families_check")
    ap.add_argument("--hf-tokenizer", action="append", default=[], help="a real tokenizer.json to compare too (repeatable)")
    args = ap.parse_args()
    import tokenizers
    print("tokenizers %s, corpus %s" % (tokenizers.__version__, args.corpus))
    if not os.path.exists(args.cli):
        raise SystemExit("no %s: build it first (ninja -C build tests/tokenize_cli) or pass --cli" % args.cli)
    os.makedirs(args.out, exist_ok=True)
    extra_path = os.path.join(args.out, "extra_corpus.txt")
    write_corpus(extra_path, extra_cases())
    corpora = [("corpus", args.corpus, tc.load_corpus(args.corpus)), ("extra", extra_path, tc.load_corpus(extra_path))]
    report = tc.Report()
    jobs = []
    for name, j in families().items():
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
        jobs.append((name, path))
    for path in args.hf_tokenizer:
        jobs.append((os.path.basename(os.path.dirname(os.path.abspath(path))) or path, path))
    for name, path in jobs:
        for cname, cpath, cases in corpora:
            tc.check_tokenizer_json(report, args.cli, "%s/%s" % (name, cname), path, cpath, cases)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report.lines, f, indent=1)
    print("ALL EXACT" if report.all_ok else "MISMATCHES FOUND (see above)")
    return 0 if report.all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
