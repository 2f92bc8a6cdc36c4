#!/usr/bin/env python3
"""PyTorch training-script checkpoints through `gpt convert` (issue 21), without torch.

    python3 tests/test_pt.py BUILD/tools/gpt BUILD/tests/dump_logits [unittest options]

Fixtures are written by tests/pt_fixture.py in torch.save's byte layout (nanoGPT ckpt.pt,
minGPT and lecture state dicts, meta.pkl); the converted model's logits are compared with a
naive double-precision forward pass of each script's own model (pt_fixture.reference_logits,
on the script's tensor names), greedy text with --context-shift with the scripts' generate()
(argmax, conditioning on the last block_size tokens) for 2 x block_size tokens and more. The
hostile cases (a pickled os.system call, SETITEM on a list, storages smaller than their
tensors, overlapping or lying zip entries, truncations, random mutations) must each end with
exit status 1 and a message naming the problem in well under a second.
"""

import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pt_fixture as F  # noqa: E402

GPT = None
DUMP = None
TIMEOUT = 60
FAST = 1.0  # seconds a refusal may take
SANITIZER_REPORTS = ("ERROR: LeakSanitizer", "ERROR: AddressSanitizer", "runtime error:")
CHARS = "\n !',.:;?ABCDEFGHIabcdefghé—😀"  # sorted, three UTF-8 lengths


def run(args, cwd=None, timeout=TIMEOUT):
    t0 = time.monotonic()
    p = subprocess.run([str(a) for a in args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    dt = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace")
    for needle in SANITIZER_REPORTS:
        if needle in err:
            raise AssertionError("%s: sanitizer report:\n%s" % (" ".join(map(str, args)), err))
    return p.returncode, p.stdout.decode("utf-8", "surrogateescape"), err, dt


class Dir:
    tmp = None


def setUpModule():
    Dir.tmp = tempfile.TemporaryDirectory(prefix="test_pt.")


def tearDownModule():
    Dir.tmp.cleanup()


def path(name):
    return Path(Dir.tmp.name) / name


def write(name, data):
    p = path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def convert(src, out, *extra, cwd=None):
    return run([GPT, "convert", src, out, "--force", "--quiet"] + list(extra), cwd=cwd)


def engine_logits(model, tokens):
    out = path("logits.bin")
    rc, _, err, _ = run([DUMP, "logits", model, out] + tokens)
    assert rc == 0, err
    data = out.read_bytes()
    return struct.unpack("<%df" % (len(data) // 4), data)


class Logits(unittest.TestCase):
    """Each layout's converted logits against the script's model (max error relative to the
    largest logit <= 1e-4)."""

    def check(self, name, obj, w, cfg, *extra, variant="torch2", zip64=False, dtype="f32"):
        src = write(name + ".pt", F.torch_save(obj, name, variant=variant, zip64=zip64))
        out = path(name + ".gpt")
        rc, _, err, _ = convert(src, out, *extra)
        self.assertEqual(rc, 0, err)
        rng = random.Random(len(name))
        tokens = [rng.randrange(cfg["vocab"]) for _ in range(cfg["block_size"])]
        got = engine_logits(out, tokens)
        ref = [v for row in F.reference_logits(cfg, w.values, tokens) for v in row]
        self.assertEqual(len(got), len(ref))
        scale = max(abs(v) for v in ref)
        err_max = max(abs(a - b) for a, b in zip(got, ref))
        self.assertLessEqual(err_max / scale, 1e-4, "%s: max error %g of logits up to %g" % (name, err_max, scale))
        return out

    def test_nanogpt_layouts(self):
        cases = [
            ("plain", {}, {}),
            ("compiled", {"compiled": True}, {}),
            ("nobias", {"bias": False}, {}),
            ("untied_masks", {"tied": False, "masks": True}, {}),
            ("views", {"layouts": True}, {}),  # an offset slice, a transpose, every other row
            ("f16", {"dtype": "f16", "compiled": True}, {}),
            ("bf16", {"dtype": "bf16", "bias": False}, {}),
            ("torch1", {"optimizer": True}, {"variant": "torch1"}),
            ("zip64", {}, {"zip64": True}),
        ]
        for name, kw, save in cases:
            with self.subTest(name):
                ckpt, w, cfg = F.make_nanogpt(random.Random(zlib.crc32(name.encode())), **kw)
                self.check("nano_" + name, ckpt, w, cfg, **save)

    def test_activation_matters(self):
        # The check above can fail: the same weights read with minGPT's tanh GELU differ.
        ckpt, w, cfg = F.make_nanogpt(random.Random(3), n_embd=16)
        cfg = dict(cfg, gelu="tanh")
        src = write("nano_act.pt", F.torch_save(ckpt, "nano_act"))
        out = path("nano_act.gpt")
        self.assertEqual(convert(src, out)[0], 0)
        tokens = list(range(8))
        got = engine_logits(out, tokens)
        ref = [v for row in F.reference_logits(cfg, w.values, tokens) for v in row]
        self.assertGreater(max(abs(a - b) for a, b in zip(got, ref)), 1e-4)

    def test_mingpt_config_json(self):
        sd, w, cfg = F.make_mingpt(random.Random(7), n_layer=3, n_head=3, n_embd=48)
        d = path("mingpt")
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps({"model": {"model_type": "gpt-nano", "n_layer": None}}))
        (d / "model.pt").write_bytes(F.torch_save(sd, "model"))
        out = path("mingpt.gpt")
        rc, _, err, _ = convert(d / "model.pt", out)
        self.assertEqual(rc, 0, err)
        tokens = [random.Random(1).randrange(cfg["vocab"]) for _ in range(8)]
        got = engine_logits(out, tokens)
        ref = [v for row in F.reference_logits(cfg, w.values, tokens) for v in row]
        scale = max(abs(v) for v in ref)
        self.assertLessEqual(max(abs(a - b) for a, b in zip(got, ref)) / scale, 1e-4)

    def test_mingpt_n_head_option(self):
        sd, w, cfg = F.make_mingpt(random.Random(8))
        self.check("mingpt_nhead", sd, w, cfg, "--n-head", "2")
        # Without config.json or --n-head: refused, saying what to give.
        src = write("mingpt_alone/model.pt", F.torch_save(sd, "model"))
        rc, _, err, _ = convert(src, path("x.gpt"))
        self.assertEqual(rc, 1)
        self.assertIn("--n-head", err)

    def test_lecture(self):
        for dtype in ("f32", "bf16"):
            with self.subTest(dtype):
                sd, w, cfg = F.make_lecture(random.Random(9), dtype=dtype)
                self.check("lecture_" + dtype, sd, w, cfg)


class CharVocab(unittest.TestCase):
    """meta.pkl and --char-vocab-from, encoding errors, greedy text past the context."""

    @classmethod
    def setUpClass(cls):
        cls.work = path("nanochar")
        (cls.work / "data" / "tinychars").mkdir(parents=True, exist_ok=True)
        (cls.work / "data" / "tinychars" / "meta.pkl").write_bytes(F.meta_pkl(CHARS))
        ckpt, cls.w, cls.cfg = F.make_nanogpt(random.Random(11), vocab=len(CHARS), block=8, dataset="tinychars",
                                              compiled=True)
        (cls.work / "out").mkdir(exist_ok=True)
        (cls.work / "out" / "ckpt.pt").write_bytes(F.torch_save(ckpt, "ckpt"))
        cls.model = cls.work / "char.gpt"
        rc, _, err, _ = convert("out/ckpt.pt", "char.gpt", cwd=cls.work)
        assert rc == 0, err

    def generate(self, prompt, n, *extra):
        return run([GPT, "generate", self.model, "-p", prompt, "-n", n, "--temp", "0", "--ignore-eos", "--threads", "1"] + list(extra))

    def test_context_shift_text(self):
        # The meta.pkl found as sample.py finds it; text as the script's generate() makes it.
        prompt = "Bé😀 "
        for n in (2 * self.cfg["block_size"], 3 * self.cfg["block_size"] + 1):
            with self.subTest(n=n):
                rc, out, err, _ = self.generate(prompt, n, "--context-shift")
                self.assertEqual(rc, 0, err)
                ids = [CHARS.index(c) for c in prompt]
                want = "".join(CHARS[i] for i in F.reference_generate(self.cfg, self.w.values, ids, n))
                self.assertEqual(out, prompt + want + "\n")

    def test_long_prompt_shifts(self):
        prompt = "abcdefghABCDEFGHI é—"  # longer than block_size 8: the last 8 condition
        rc, out, err, _ = self.generate(prompt, 9, "--context-shift")
        self.assertEqual(rc, 0, err)
        ids = [CHARS.index(c) for c in prompt]
        want = "".join(CHARS[i] for i in F.reference_generate(self.cfg, self.w.values, ids, 9))
        self.assertEqual(out, prompt + want + "\n")

    def test_without_shift_stops_at_context(self):
        rc, out, err, _ = self.generate("abc", 40)
        self.assertEqual(rc, 0, err)
        self.assertIn("context is full", err)
        self.assertEqual(len(out) - len("abc\n"), 8 - 3 + 1)

    def test_unknown_character(self):
        rc, _, err, _ = self.generate("abcé X", 4)
        self.assertEqual(rc, 1)
        self.assertIn("'X'", err)
        self.assertIn("byte 6", err)  # a, b, c, é (2 bytes), space

    def test_char_vocab_from_text(self):
        text = "to be, or not to be: that is the question — 😀\n"
        chars = "".join(sorted(set(text)))
        sd, w, cfg = F.make_mingpt(random.Random(12), vocab=len(chars))
        src = write("chargpt/model.pt", F.torch_save(sd, "model"))
        txt = write("chargpt/input.txt", text.encode())
        out = path("chargpt.gpt")
        rc, _, err, _ = convert(src, out, "--n-head", "2", "--char-vocab-from", txt)
        self.assertEqual(rc, 0, err)
        prompt = "to be"
        rc, got, err, _ = run([GPT, "generate", out, "-p", prompt, "-n", 17, "--temp", "0", "--context-shift", "--threads", "1"])
        self.assertEqual(rc, 0, err)
        want = "".join(chars[i] for i in F.reference_generate(cfg, w.values, [chars.index(c) for c in prompt], 17))
        self.assertEqual(got, prompt + want + "\n")

    def test_explicit_meta_and_padding(self):
        # --meta names the file; a vocabulary smaller than the model's is padded, with a warning.
        ckpt, _, _ = F.make_nanogpt(random.Random(13), vocab=len(CHARS) + 3)
        src = write("padded.pt", F.torch_save(ckpt, "padded"))
        meta = write("meta/meta.pkl", F.meta_pkl(CHARS, protocol=2))
        rc, _, err, _ = convert(src, path("padded.gpt"), "--meta", meta)
        self.assertEqual(rc, 0, err)
        self.assertIn("unused", err)

    def test_meta_refused(self):
        cases = {
            "is not a single character": F.pickle.dumps({"vocab_size": 2, "itos": {0: "ab", 1: "c"}, "stoi": {}}),
            "refuses global 'os.system'": b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93\x8c\x02id\x85R.",
            "refuses global 'builtins.eval'": b"\x80\x02cbuiltins\neval\nX\x03\x00\x00\x001+1\x85R.",
            "SETITEM on a list": b"\x80\x02]X\x01\x00\x00\x00aK\x01s.",
        }
        ckpt, _, _ = F.make_nanogpt(random.Random(14), vocab=len(CHARS))
        src = write("metabad.pt", F.torch_save(ckpt, "metabad"))
        for i, (needle, data) in enumerate(cases.items()):
            with self.subTest(needle):
                meta = write("metabad/%d.pkl" % i, data)
                rc, _, err, dt = convert(src, path("metabad.gpt"), "--meta", meta)
                self.assertEqual(rc, 1, err)
                self.assertIn(needle, err)
                self.assertLess(dt, FAST)


def patch_central(data, index, field, value):
    """Rewrites a little-endian u32 field (offset within the central entry) of entry index."""
    pos = -1
    for _ in range(index + 1):
        pos = data.index(b"PK\x01\x02", pos + 1)
    out = bytearray(data)
    out[pos + field:pos + field + 4] = struct.pack("<I", value)
    return bytes(out)


def zip_with_pickle(pkl, storages=()):
    recs = [("archive/data.pkl", pkl)] + [("archive/data/" + k, v) for k, v in storages] + [("archive/version", b"3\n")]
    return F.zip_archive(recs)


class Hostile(unittest.TestCase):
    """Hostile .pt files: exit 1, a message naming the problem, well under a second."""

    def refused(self, name, data, needle):
        src = write("hostile/" + name + ".pt", data)
        rc, _, err, dt = convert(src, path("hostile.gpt"))
        self.assertEqual(rc, 1, "%s: exit %d\n%s" % (name, rc, err))
        self.assertIn(needle, err, name)
        self.assertLess(dt, FAST, name)
        self.assertFalse(path("hostile.gpt").exists())

    def good(self):
        ckpt, _, _ = F.make_nanogpt(random.Random(21))
        return F.torch_save(ckpt, "ckpt")

    def test_attacks(self):
        t = F.Tensor
        small = F.Storage("0", "f32", bytes(40))
        lying = F.Storage("0", "f32", bytes(40), numel=1000)
        cases = [
            ("os_system", zip_with_pickle(b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03."),
             "refuses global 'os.system'"),
            ("stack_global", zip_with_pickle(b"\x80\x04\x8c\x08builtins\x8c\x04exec\x93X\x01\x00\x00\x00x\x85R."),
             "refuses global 'builtins.exec'"),
            ("setitem_list", zip_with_pickle(b"\x80\x02]X\x01\x00\x00\x00aK\x01s."), "SETITEM on a list"),
            ("append_dict", zip_with_pickle(b"\x80\x02}K\x01a."), "APPEND on a dict"),
            ("small_storage", F.torch_save({"w": t(small, 0, (4, 4), (4, 1))}), "storage smaller than its tensor"),
            ("offset_past", F.torch_save({"w": t(small, 8, (4,), (1,))}), "storage smaller than its tensor"),
            ("lying_storage", F.torch_save({"w": t(lying, 0, (10,), (1,))}), "claims 1000"),
            ("legacy", b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02M\xe9\x03.", "legacy PyTorch format"),
            ("preview", b"PYTORCH1" + bytes(64), "PYTORCH1"),
            ("unknown_names", F.torch_save(F.state_dict([("encoder.layer.0.w", t(F.Storage("0", "f32", bytes(16)), 0, (4,), (1,)))])),
             "encoder.layer.0.w"),
            ("deep", zip_with_pickle(b"\x80\x02" + b"]" * 100 + b"a" * 99 + b"."), "nested deeper"),
            ("marks", zip_with_pickle(b"\x80\x02" + b"(" * 100000 + b"."), "MARK"),
            ("long_key", zip_with_pickle(b"\x80\x02}X\x00\x20\x00\x00" + b"k" * 0x2000 + b"K\x01s."), "dict key of 8192 bytes"),
            ("memo_miss", zip_with_pickle(b"\x80\x02h\x07."), "memo entry 7"),
            ("no_stop", zip_with_pickle(b"\x80\x02N"), "without STOP"),
        ]
        # A broadcast view (stride 0) of a small storage as a whole embedding.
        bc, _, _ = F.make_nanogpt(random.Random(22))
        bc["model"]["transformer.wte.weight"] = t(F.Storage("99", "f32", bytes(64)), 0, (23, 16), (0, 1))
        cases.append(("broadcast", F.torch_save(bc), "broadcast view"))
        good = self.good()
        # Two central entries pointing at the same local header; a size past the data area.
        second = patch_central(good, 1, 42, struct.unpack("<I", good[good.index(b"PK\x01\x02") + 42:][:4])[0])
        cases.append(("overlap", second, "overlap"))
        cases.append(("lying_size", patch_central(patch_central(good, 4, 20, 1 << 30), 4, 24, 1 << 30), "runs past"))
        import io
        import zipfile
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("archive/data.pkl", b"\x80\x02}.")
        cases.append(("deflated", buf.getvalue(), "compressed"))
        for name, data, needle in cases:
            with self.subTest(name):
                self.refused(name, data, needle)

    def test_truncations(self):
        good = self.good()
        for i in range(1, 41):
            n = len(good) * i // 41
            with self.subTest(n=n):
                src = write("hostile/trunc.pt", good[:n])
                rc, _, err, dt = convert(src, path("hostile.gpt"))
                self.assertEqual(rc, 1, err)
                self.assertLess(dt, FAST)

    def test_mutations(self):
        # Random bytes changed: any outcome but a crash, a hang or a slow refusal.
        good = self.good()
        rng = random.Random(2024)
        for i in range(60):
            data = bytearray(good)
            for _ in range(rng.choice((1, 4, 16))):
                data[rng.randrange(len(data))] = rng.randrange(256)
            with self.subTest(i=i):
                src = write("hostile/mut.pt", bytes(data))
                rc, _, err, dt = convert(src, path("hostile.gpt"))
                self.assertIn(rc, (0, 1), err)
                if rc == 1:
                    self.assertTrue(err.startswith("gpt convert: "), err)
                self.assertLess(dt, 5.0)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: test_pt.py PATH/TO/gpt PATH/TO/dump_logits [unittest options]")
    GPT = os.path.abspath(sys.argv.pop(1))
    DUMP = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
