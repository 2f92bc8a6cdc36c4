#!/usr/bin/env python3
"""The `gpt` command as a user runs it: exit status, stdout and stderr of each case.

    python3 tests/test_cli.py BUILD/tools/gpt [unittest options]

Meson runs it in suite 'unit' (tests/meson.build). The fixtures are the bundled
models/kjv-llama.gpt and tiny random models written here with bindings/python's
libgpt.fixture (pure Python). Under an AddressSanitizer build (.ci's build-asan) the same cases
also check that no path of the command leaks: every case fails on a sanitizer report in stderr
(LeakSanitizer reports at exit), besides checking the exact exit status.

Regressions of issue 15 (items 8, 9, 14, 15, 17, 18, 19, CLI side) and issue 16 (--no-verify,
the random seed, `gpt bench` on a small model); docs/RELIABILITY.md lists them.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SRC / "bindings" / "python"))
from libgpt import fixture  # noqa: E402

GPT = None  # the binary, from argv[1]
KJV = SRC / "models" / "kjv-llama.gpt"
TIMEOUT = 60


SANITIZER_REPORTS = ("ERROR: LeakSanitizer", "ERROR: AddressSanitizer", "runtime error:")


def no_sanitizer_report(args, err):
    """In a sanitizer build a leak (or any report) fails the case whatever the exit status
    (ASan's exit status for leaks is 1, which some error paths give anyway)."""
    for needle in SANITIZER_REPORTS:
        if needle in err:
            raise AssertionError("gpt %s: sanitizer report:\n%s" % (" ".join(map(str, args)), err))


def run(*args, timeout=TIMEOUT):
    """Runs gpt with args; returns (exit status, stdout text, stderr text)."""
    p = subprocess.run([GPT] + [str(a) for a in args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    err = p.stderr.decode("utf-8", "surrogateescape")
    no_sanitizer_report(args, err)
    return p.returncode, p.stdout.decode("utf-8", "surrogateescape"), err


def run_input(args, text, timeout=TIMEOUT):
    """Runs gpt with args and text piped to stdin; returns (exit status, stdout, stderr)."""
    p = subprocess.run([GPT] + [str(a) for a in args], input=text if isinstance(text, bytes) else text.encode(),
                       stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    err = p.stderr.decode("utf-8", "surrogateescape")
    no_sanitizer_report(args, err)
    return p.returncode, p.stdout.decode("utf-8", "surrogateescape"), err


def model_bytes(edit=None, **kwargs):
    """fixture.make_model's bytes, with edit(metadata, tensors) -> (metadata, tensors) applied
    to what it encodes (to change the tokenizer, add hostile names, zero a tensor)."""
    if edit is None:
        return fixture.make_model(**kwargs)
    original = fixture.encode_weight_file
    fixture.encode_weight_file = lambda meta, tensors: original(*edit(list(meta), list(tensors)))
    try:
        return fixture.make_model(**kwargs)
    finally:
        fixture.encode_weight_file = original


def spm_park(meta, tensors):
    """A SentencePiece-style tokenizer in place of the fixture's byte-level one (same vocabulary
    size), with "\u2581park" at id 0 and the LM head zeroed: every logit is 0, so greedy
    decoding picks id 0, " park", at every step."""
    vocab = next(v for k, _, v in meta if k == "model.vocab_size")
    tokens = ["\u2581park", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tokens += ["w%d" % i for i in range(vocab - len(tokens))]
    types = [1, 3, 3] + [6] * 256 + [1] * (vocab - 259)
    scores = [-1.0 * i for i in range(vocab)]
    meta = [m for m in meta if not m[0].startswith("tokenizer.")]
    meta += [("tokenizer.model", fixture.STR, "spm"), ("tokenizer.tokens", fixture.STR_ARRAY, tokens),
             ("tokenizer.types", fixture.I32_ARRAY, types), ("tokenizer.scores", fixture.F32_ARRAY, scores),
             ("tokenizer.bos_id", fixture.I32, 1), ("tokenizer.eos_id", fixture.I32, 2),
             ("tokenizer.add_bos", fixture.U32, 1), ("tokenizer.add_space_prefix", fixture.U32, 1)]
    tensors = [(n, dt, shape, bytes(len(data)) if n == "lm_head.weight" else data) for n, dt, shape, data in tensors]
    return meta, tensors


ESC_NAME = "evil\x1b[2J\x1b]0;title\x07\x9b31m\rname"


def hostile_metadata(meta, tensors):
    """Control bytes (ESC, BEL, CR, a C1 CSI) in general.name, in an extra key and its value."""
    meta = [(k, t, ESC_NAME) if k == "general.name" else (k, t, v) for k, t, v in meta]
    meta.append(("x.key\x1b[31m\n", fixture.STR, "value\x1b]0;pwned\x07\x00end"))
    return meta, tensors


def hostile_tensor(meta, tensors):
    """An extra tensor whose name carries control bytes (the format allows any name; the model
    loader refuses it as unexpected)."""
    return meta, tensors + [("bad\x1b[2J\x07name", fixture.DTYPE_F32, (4,), bytes(16))]


def assert_terminal_safe(test, text, what):
    """No control byte but newline, no DEL, no C1 control: what a terminal could act on."""
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
    test.assertEqual(bad, [], "%s passes control characters %r:\n%r" % (what, bad, text))


class Fixtures:
    dir = None
    tiny = None            # random llama, byte-level BPE, context 64 (a path)
    tiny_data = None       # its bytes, for copies to damage
    spm = None
    hostile = None
    hostile_tensor = None


def setUpModule():
    Fixtures.dir = tempfile.TemporaryDirectory(prefix="test_cli.")
    d = Path(Fixtures.dir.name)

    def write(name, data):
        p = d / name
        p.write_bytes(data)
        return p

    tiny = model_bytes(context_length=64, seed=3)
    Fixtures.tiny_data = tiny
    Fixtures.tiny = write("tiny.gpt", tiny)
    Fixtures.spm = write("spm.gpt", model_bytes(spm_park, context_length=64, seed=4))
    Fixtures.hostile = write("hostile.gpt", model_bytes(hostile_metadata, context_length=64, seed=5))
    Fixtures.hostile_tensor = write("hostile_tensor.gpt", model_bytes(hostile_tensor, context_length=64, seed=6))


def tearDownModule():
    Fixtures.dir.cleanup()


class Numbers(unittest.TestCase):
    """Item 17: every number option is range-checked: exit 2, nothing on stdout, and a message
    naming the option and the value (was: -n 4294967296 generated nothing and exited 0,
    --device cuda:4294967295 ran on the CPU)."""

    def check_refused(self, args, option, value):
        rc, out, err = run(*args)
        self.assertEqual(rc, 2, "%s: exit %d\n%s" % (args, rc, err))
        self.assertEqual(out, "", args)
        self.assertIn(option, err, args)
        self.assertIn(value, err, args)
        self.assertEqual(err.count("\n"), 1, "one line: %r" % err)

    def test_generate_numbers_refused(self):
        m = Fixtures.tiny
        cases = [
            ("-n", "4294967296"), ("-n", "-1"), ("-n", "+5"), ("-n", " 5"), ("-n", "5 "), ("-n", "0x10"), ("-n", "5k"),
            ("-n", ""), ("--max-tokens", "99999999999999999999999"),
            ("--top-k", "4294967296"), ("--top-k", "-40"),
            ("--seed", "18446744073709551616"), ("--seed", "-1"), ("--seed", "1.5"),
            ("--threads", "4294967297"), ("--threads", "257"),
            ("--max-seq", "4294967296"), ("--max-seq", "0"),
            ("--temp", "nan"), ("--temp", "inf"), ("--temp", "-inf"), ("--temp", "1e39"), ("--temp", "0x1p3"),
            ("--temp", "0.5x"), ("--temp", ""),
            ("--top-p", "0"), ("--top-p", "1.0001"), ("--top-p", "-0.5"), ("--top-p", "nan"), ("--top-p", "1e-50"),
            ("--min-p", "-0.01"), ("--min-p", "1.5"), ("--min-p", "nan"),
            ("--repeat-penalty", "0"), ("--repeat-penalty", "-1"), ("--repeat-penalty", "inf"),
        ]
        for option, value in cases:
            with self.subTest(option=option, value=value):
                self.check_refused(["generate", m, "-p", "hello", option, value], option, "'%s'" % value)
        for value in ["4294967295", "4294967296", "-1", "2147483648", "1x"]:
            with self.subTest(device="cuda:" + value):
                self.check_refused(["generate", m, "-p", "hello", "--device", "cuda:" + value], "--device", value)
        for value in ["1,-2", "1,,2", "4294967297", "1,2,"]:
            with self.subTest(tokens=value):
                self.check_refused(["generate", m, "--tokens", value], "--tokens", "'")

    def test_generate_values_known_after_loading(self):
        # Checked against the model before anything is printed: exit 2, stdout empty.
        rc, out, err = run("generate", Fixtures.tiny, "-p", "hello", "--max-seq", "65")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--max-seq: 65 exceeds the model's context length (64)", err)
        rc, out, err = run("generate", Fixtures.tiny, "--tokens", "1,2,100000")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--tokens: id 100000 is outside the model's vocabulary", err)

    def test_bench_numbers_refused(self):
        m = Fixtures.tiny
        cases = [("--prefill", "4294967296"), ("--decode", "-1"), ("--batch", "0"), ("--batch", "4097"),
                 ("--batch", "4294967297"), ("--pos", "4294967296"), ("--reps", "0"), ("--reps", "1e3"), ("--warmup", "1001"), ("--warmup", "-1"),
                 ("--threads", "99999999999"), ("--forward", "1x4294967296"), ("--forward", "4294967297x1"),
                 ("--forward", "0x8"), ("--forward", "8x"), ("--forward", "-1x8")]
        for option, value in cases:
            with self.subTest(option=option, value=value):
                rc, out, err = run("bench", m, option, value)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertIn(option, err)
        rc, out, err = run("bench", m, "--forward", "8")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("BxT", err)

    def test_valid_numbers_accepted(self):
        rc, out, err = run("generate", Fixtures.tiny, "-p", "the", "-n", "3", "--temp", "0", "--top-k", "4294967295",
                           "--top-p", "1", "--min-p", "0", "--repeat-penalty", "1.1", "--seed", "18446744073709551615",
                           "--threads", "1", "--max-seq", "64")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("the"), out)
        rc, out, err = run("generate", Fixtures.tiny, "-p", "the", "-n", "0")
        self.assertEqual((rc, out), (0, "the\n"), err)


class ErrorPaths(unittest.TestCase):
    """Item 18: error paths after the model is loaded free everything (under ASan a leak
    changes the exit status): `gpt generate --max-seq` too large leaked the detokenizer,
    `gpt bench` leaked the model when a check failed."""

    def test_generate_max_seq_too_large(self):
        rc, out, err = run("generate", KJV, "-p", "In the beginning", "--max-seq", "100000")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--max-seq: 100000 exceeds the model's context length (512)", err)

    def test_generate_failures_after_load(self):
        rc, out, err = run("generate", Fixtures.hostile_tensor, "-p", "x")
        self.assertEqual((rc, out), (1, ""), err)
        rc, out, err = run("generate", KJV, "--tokens", "1,2", "-p", "x")
        self.assertEqual((rc, out), (2, ""), err)

    def test_bench_check_fails_after_load(self):
        rc, out, err = run("bench", KJV, "--forward", "1x600", "--prefill", "0", "--decode", "0", "--reps", "1")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--forward 1x600 needs 600 positions", err)
        self.assertIn("is 512", err)


class ContextEnd(unittest.TestCase):
    """Item 19 and item 9: the run stops at the full context with a notice and exit 0; bad
    sampling values and an over-long prompt are refused before the prompt is echoed; the
    context is sized to prompt + -n."""

    def test_stops_at_full_context(self):
        rc, out, err = run("generate", Fixtures.tiny, "-p", "the", "-n", "1000", "--temp", "0")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("the") and out.endswith("\n"), out)
        self.assertRegex(err, r"the context is full: stopped after \d+ of the 1000 tokens asked for")
        self.assertIn("context 64 of 64 positions", err)
        rc, out, err = run("generate", Fixtures.tiny, "-p", "the", "-n", "1000", "--temp", "0", "--max-seq", "10")
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"stopped after \d+ of the 1000 tokens asked for .*--max-seq 10")

    def test_context_full_counts(self):
        # --tokens gives an exact prompt length: 5 tokens in max_seq 8 leave room for 4
        # generated tokens (the last sampled one needs no position).
        rc, out, err = run("generate", Fixtures.tiny, "--tokens", "1,2,3,4,5", "-n", "50", "--temp", "0", "--max-seq", "8",
                           "--ignore-eos")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(out.split()), 4, out)
        self.assertIn("stopped after 4 of the 50 tokens asked for (prompt 5 tokens + 4 generated", err)

    def test_context_sized_to_the_run(self):
        rc, out, err = run("generate", KJV, "--tokens", "1,2,3", "-n", "5", "--temp", "0", "--ignore-eos")
        self.assertEqual(rc, 0, err)
        self.assertIn("context 8 of 512 positions", err)
        self.assertNotIn("context is full", err)
        self.assertEqual(len(out.split()), 5, out)

    def test_bad_sampling_values_before_echo(self):
        for option, value in [("--top-p", "0"), ("--top-p", "2"), ("--min-p", "2"), ("--temp", "nan"),
                              ("--repeat-penalty", "0")]:
            with self.subTest(option=option):
                rc, out, err = run("generate", Fixtures.tiny, "-p", "the prompt", option, value)
                self.assertEqual((rc, out), (2, ""), err)

    def test_prompt_longer_than_context(self):
        rc, out, err = run("generate", Fixtures.tiny, "-p", "x" * 100, "-n", "1")
        self.assertEqual((rc, out), (1, ""), err)
        self.assertRegex(err, r"the prompt is \d+ tokens, longer than the model's context length \(64 tokens\)")
        rc, out, err = run("generate", Fixtures.tiny, "-p", "x" * 20, "--max-seq", "10")
        self.assertEqual((rc, out), (1, ""), err)
        self.assertRegex(err, r"the prompt is \d+ tokens, longer than --max-seq 10")

    def test_temperature_negative_is_greedy(self):
        # As the library defines it: a temperature <= 0 is greedy.
        a = run("generate", Fixtures.tiny, "-p", "the", "-n", "8", "--temp", "0")
        b = run("generate", Fixtures.tiny, "-p", "the", "-n", "8", "--temp", "-1")
        self.assertEqual((a[0], b[0]), (0, 0), a[2] + b[2])
        self.assertEqual(a[1], b[1])


class ContinuedText(unittest.TestCase):
    """Item 14: the continuation of an echoed prompt keeps its first space (was "thepark")."""

    def test_space_after_prompt(self):
        rc, out, err = run("generate", Fixtures.spm, "-p", "Lily went to the", "-n", "2", "--temp", "0")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "Lily went to the park park\n")

    def test_start_of_text_drops_the_space(self):
        # No prompt text: the text starts here, without a leading space.
        rc, out, err = run("generate", Fixtures.spm, "-n", "2", "--temp", "0")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "park park\n")


class DevicePlan(unittest.TestCase):
    """gpt info --device and --plan (issue 22): the host's facts against /proc/meminfo read
    here, the plan's weights against the file's size, and the usage errors."""

    @staticmethod
    def meminfo(key):
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                name, _, rest = line.partition(":")
                if name == key:
                    return int(rest.split()[0]) * 1024
        except OSError:
            pass
        return None

    def test_device_cpu(self):
        rc, out, err = run("info", "--device", "cpu")
        self.assertEqual(rc, 0, err)
        total = self.meminfo("MemTotal")
        if total is not None:
            shown = float(out.split("memory:")[1].split("GiB total")[0])
            self.assertAlmostEqual(shown, total / 2**30, delta=0.006)

    def test_plan_cpu(self):
        rc, out, err = run("info", Fixtures.tiny, "--plan", "--device", "cpu", "--ctx", "32", "--batch", "2", "--json")
        self.assertEqual(rc, 0, err)
        p = json.loads(out)
        self.assertEqual(p["weight_host_bytes"], os.path.getsize(Fixtures.tiny))  # on the CPU the weights are the file
        self.assertEqual((p["weight_device_bytes"], p["context_device_bytes"]), (0, 0))
        self.assertEqual((p["max_seq"], p["max_batch"], p["weights"]), (32, 2, "cpu"))
        self.assertGreater(p["context_host_bytes"], 0)
        self.assertEqual(p["total_bytes"], p["weight_host_bytes"] + p["context_host_bytes"])
        rc, out, err = run("info", Fixtures.tiny, "--plan", "--device", "cpu")
        self.assertEqual(rc, 0, err)
        self.assertIn("fits:", out)

    def test_synth_file_matches_synthetic_plan(self):
        # gpt synth writes the file (its real table); --plan --synthetic describes it without one.
        for dtype in ("f32", "f16", "q8", "q4"):
            out = Path(Fixtures.dir.name) / ("synth_%s.gpt" % dtype)
            rc, so, err = run("synth", "stories15m", out, "--dtype", dtype)
            self.assertEqual(rc, 0, err)
            rc, so, err = run("info", out, "--no-tensors")
            self.assertEqual(rc, 0, err)
            self.assertIn("checksums:  all", so)
            rc, from_file, err = run("info", out, "--plan", "--device", "cpu", "--ctx", "64", "--json")
            self.assertEqual(rc, 0, err)
            rc, from_shape, err = run("info", "--plan", "--synthetic", "stories15m", "--dtype", dtype, "--device", "cpu",
                                      "--ctx", "64", "--json")
            self.assertEqual(rc, 0, err)
            a, b = json.loads(from_file), json.loads(from_shape)
            a.pop("model"), b.pop("model")
            self.assertEqual(a, b, dtype)
            self.assertEqual(a["weight_host_bytes"], os.path.getsize(out))
        rc, so, err = run("synth", "stories15m", Path(Fixtures.dir.name) / "synth_f16.gpt")
        self.assertEqual(rc, 1, "an existing file is not overwritten without --force")
        for args in (["no-such-shape", "x.gpt"], ["stories15m"], ["stories15m", "x.gpt", "--dtype", "auto"]):
            rc, so, err = run("synth", *args)
            self.assertEqual(rc, 2, (args, err))

    def test_plan_usage_errors(self):
        for args in (["--plan"], ["--plan", "--synthetic", "no-such-shape"], [str(Fixtures.tiny), "--ctx", "8"],
                     [str(Fixtures.tiny), "--plan", "--weights", "gpu"], [str(Fixtures.tiny), "--plan", "--ctx", "0"],
                     [str(Fixtures.tiny), "--plan", "--device", "cpu", "--weights", "host"],
                     [str(Fixtures.tiny), "--plan", "--synthetic", "tinyllama-1.1b"], ["--device", "gpu"]):
            rc, out, err = run("info", *args)
            self.assertEqual(rc, 2, (args, out, err))

    def test_plan_hostile_file(self):
        for f in (Fixtures.hostile, Fixtures.hostile_tensor):
            rc, out, err = run("info", f, "--plan", "--device", "cpu")
            self.assertIn(rc, (0, 1), err)
            assert_terminal_safe(self, out, "gpt info --plan stdout")
            assert_terminal_safe(self, err, "gpt info --plan stderr")
        damaged = Path(Fixtures.dir.name) / "plan_truncated.gpt"
        damaged.write_bytes(Fixtures.tiny_data[: len(Fixtures.tiny_data) // 2])
        rc, out, err = run("info", damaged, "--plan", "--device", "cpu")
        self.assertEqual(rc, 1, err)
        self.assertIn("plan_truncated.gpt", err)


class ControlBytes(unittest.TestCase):
    """Item 15: names, keys, string values and tensor names from a file reach the terminal
    escaped (\\xNN); the generated text is printed as is."""

    def test_info_escapes(self):
        rc, out, err = run("info", Fixtures.hostile)
        self.assertEqual(rc, 0, err)
        assert_terminal_safe(self, out, "gpt info stdout")
        assert_terminal_safe(self, err, "gpt info stderr")
        self.assertIn("evil\\x1b[2J\\x1b]0;title\\x07", out)
        self.assertIn("x.key\\x1b[31m\\x0a", out)
        self.assertIn("value\\x1b]0;pwned\\x07\\x00end", out)
        rc, out, err = run("info", Fixtures.hostile_tensor)
        self.assertEqual(rc, 0, err)
        assert_terminal_safe(self, out, "gpt info stdout")
        self.assertIn("bad\\x1b[2J\\x07name", out)

    def test_generate_escapes(self):
        rc, out, err = run("generate", Fixtures.hostile, "-p", "the", "-n", "2", "--temp", "0")
        self.assertEqual(rc, 0, err)
        assert_terminal_safe(self, err, "gpt generate stderr")
        self.assertIn("gpt: evil\\x1b[2J", err)
        rc, out, err = run("generate", Fixtures.hostile_tensor, "-p", "the")
        self.assertEqual((rc, out), (1, ""), err)
        assert_terminal_safe(self, err, "gpt generate stderr")
        self.assertIn("bad\\x1b[2J\\x07name", err)

    def test_paths_and_options_escaped(self):
        rc, out, err = run("generate", "no\x1b[2Jsuch.gpt")
        self.assertEqual((rc, out), (1, ""), err)
        assert_terminal_safe(self, err, "stderr")
        rc, out, err = run("generate", Fixtures.tiny, "--bogus\x1b[2J")
        self.assertEqual((rc, out), (2, ""), err)
        assert_terminal_safe(self, err, "stderr")
        rc, out, err = run("generate", Fixtures.tiny, "-n", "1\x1b[2J")
        self.assertEqual((rc, out), (2, ""), err)
        assert_terminal_safe(self, err, "stderr")


def fill_pipe():
    """A pipe whose buffer is full: a child writing to it blocks until the reader drains it.
    Returns (read fd, write fd, filler byte count); the write end is blocking again."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    n = 0
    try:
        while True:
            n += os.write(w, b"\0" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    return r, w, n


def blocked_on_stdout(pid):
    """Whether process pid's main thread sleeps in a write to a pipe (its stdout here): from
    /proc/PID/wchan, else /proc/PID/syscall (write on fd 1: x86-64 syscall 1, arm64 64).
    None when neither tells."""
    try:
        with open("/proc/%d/wchan" % pid) as f:
            wchan = f.read().strip()
        if wchan not in ("", "0"):
            return "pipe_write" in wchan
    except OSError:
        pass
    try:
        with open("/proc/%d/syscall" % pid) as f:
            fields = f.read().split()
        if not fields or fields[0] == "running":
            return False
        return fields[0] in ("1", "64") and len(fields) > 1 and int(fields[1], 16) == 1
    except (OSError, ValueError):
        return None


def maps_file(pid, path):
    try:
        with open("/proc/%d/maps" % pid) as f:
            return str(path) in f.read()
    except OSError:
        return False


class ChangedFile(unittest.TestCase):
    """Item 8: a model file truncated or rewritten while gpt runs. The child's stdout is a full
    pipe, so it blocks at its first write (the echoed prompt, or gpt info's listing) with the
    model loaded; once /proc shows it waiting there (and the model mapped, or the header line
    printed) the file is changed and the pipe drained: the rest of the run sees the changed
    file, deterministically."""

    def run_with_change(self, args, change, ready):
        """Runs gpt args; when ready(pid, stderr so far) holds and gpt waits on its stdout,
        calls change(); returns (exit status, stdout, stderr)."""
        r, w, filler = fill_pipe()
        with tempfile.TemporaryFile() as errf:
            p = subprocess.Popen([GPT] + [str(a) for a in args], stdin=subprocess.DEVNULL, stdout=w, stderr=errf)
            os.close(w)
            try:
                deadline = time.time() + 20
                while True:
                    errf.seek(0)
                    if ready(p.pid, errf.read().decode("utf-8", "surrogateescape")):
                        blocked = blocked_on_stdout(p.pid)
                        if blocked is None:
                            self.skipTest("cannot tell from /proc whether gpt waits on its stdout")
                        if blocked:
                            break
                    self.assertIsNone(p.poll(), "gpt ended before it was ready")
                    self.assertLess(time.time(), deadline, "timed out waiting for gpt")
                    time.sleep(0.005)
                change()
                chunks = []
                while True:
                    b = os.read(r, 65536)
                    if not b:
                        break
                    chunks.append(b)
                rc = p.wait(timeout=TIMEOUT)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                os.close(r)
            errf.seek(0)
            err = errf.read().decode("utf-8", "surrogateescape")
        no_sanitizer_report(args, err)
        out = b"".join(chunks)[filler:]
        return rc, out.decode("utf-8", "surrogateescape"), err

    def copy(self, name):
        p = Path(Fixtures.dir.name) / name
        p.write_bytes(Fixtures.tiny_data)
        return p

    def truncate(self, path):
        return lambda: os.truncate(path, 0)

    def rewrite_data(self, path):
        # Every tensor byte in place (same size, same inode) becomes 0x40 (f32 2.0-ish
        # values): the weights a mapping would see change; the header stays valid.
        def change():
            data = bytearray(path.read_bytes())
            start = 4096
            data[start:] = b"\x40" * (len(data) - start)
            with open(path, "r+b") as f:
                f.write(data)
        return change

    def test_generate_reads_into_memory(self):
        args = ["-p", "the", "-n", "6", "--temp", "0", "--device", "cpu"]
        rc, want, err = run("generate", Fixtures.tiny, *args)
        self.assertEqual(rc, 0, err)
        # The header line is printed after load and context creation.
        self.assertEqual(run("generate", Fixtures.tiny, "--no-mmap", *args)[:2], (0, want))
        header = lambda pid, err: re.search(r"^gpt: .* on (cpu|cuda:\d+).*\n", err, re.M) is not None
        m = self.copy("truncated.gpt")
        rc, out, err = self.run_with_change(["generate", m] + args, self.truncate(m), header)
        self.assertEqual(rc, 0, err)  # was SIGBUS
        self.assertEqual(out, want)
        m = self.copy("rewritten.gpt")
        rc, out, err = self.run_with_change(["generate", m] + args, self.rewrite_data(m), header)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, want)  # was other text: the mapping saw the new bytes

    def test_generate_mmap_truncated(self):
        m = self.copy("mapped.gpt")
        rc, out, err = self.run_with_change(["generate", m, "-p", "the", "-n", "6", "--temp", "0", "--mmap", "--device", "cpu"],
                                            self.truncate(m), lambda pid, err: maps_file(pid, m))
        self.assertEqual(rc, 1, "%d %s" % (rc, err))  # not -SIGBUS
        self.assertIn("gpt: %s changed on disk while in use (truncated?)" % m, err)
        self.assertIn("without --mmap", err)
        self.assertTrue(out.startswith("the"), out)

    def test_info_truncated(self):
        m = self.copy("info.gpt")
        rc, out, err = self.run_with_change(["info", m], self.truncate(m), lambda pid, err: maps_file(pid, m))
        self.assertEqual(rc, 1, "%d %s" % (rc, err))  # not -SIGBUS
        self.assertIn("gpt: %s changed on disk while in use (truncated?)" % m, err)
        self.assertIn("tensors:", out)
        self.assertNotIn("checksums:", out)


class Weights(unittest.TestCase):
    """Issue 22: --weights host|device on the commands that load a model onto a GPU."""

    def test_bad_value_refused(self):
        for cmd in (["generate", Fixtures.tiny, "-p", "a"], ["bench", Fixtures.tiny], ["chat", Fixtures.tiny],
                    ["perplexity", Fixtures.tiny, Fixtures.tiny]):
            for value in ("hosts", "", "HOST", "cpu"):
                with self.subTest(cmd=cmd[0], value=value):
                    rc, out, err = run(*cmd, "--weights", value)
                    self.assertEqual((rc, out), (2, ""), err)
                    self.assertIn("--weights", err)
                    self.assertIn("expected host or device", err)

    def test_cpu_ignores_it(self):
        # On the CPU the weights are in host memory anyway: the same text either way.
        args = ["generate", Fixtures.tiny, "-p", "the", "-n", "6", "--temp", "0", "--device", "cpu"]
        rc, want, err = run(*args)
        self.assertEqual(rc, 0, err)
        for value in ("host", "device"):
            rc, out, err = run(*args, "--weights", value)
            self.assertEqual((rc, out), (0, want), err)
            self.assertNotIn("notice", err)


class Issue16(unittest.TestCase):
    """--no-verify for generate, a fresh seed per run, `gpt bench` on the shipped model."""

    def test_no_verify(self):
        data = bytearray(Fixtures.tiny_data)
        data[-3] ^= 0x01  # inside the last tensor: its crc32 no longer matches
        m = Path(Fixtures.dir.name) / "damaged.gpt"
        m.write_bytes(data)
        rc, out, err = run("generate", m, "-p", "the", "-n", "2", "--temp", "0")
        self.assertEqual((rc, out), (1, ""), err)
        self.assertIn("GPT_ERR_CHECKSUM", err)
        rc, out, err = run("generate", m, "-p", "the", "-n", "2", "--temp", "0", "--no-verify")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("the"), out)

    def test_random_seed(self):
        # --ignore-eos: two runs that both sampled the end of sequence first printed the same
        # (empty) text, about 1 run of the suite in 50.
        args = ["generate", Fixtures.tiny, "-p", "the", "-n", "24", "--temp", "1", "--ignore-eos"]
        runs = [run(*args) for _ in range(2)]
        seeds = []
        for rc, out, err in runs:
            self.assertEqual(rc, 0, err)
            m = re.search(r"^gpt: seed (\d+) \(give --seed \1 to repeat this run\)$", err, re.M)
            self.assertIsNotNone(m, err)
            seeds.append(m.group(1))
        self.assertNotEqual(seeds[0], seeds[1])
        self.assertNotEqual(runs[0][1], runs[1][1])
        rc, out, err = run(*(args + ["--seed", seeds[0]]))
        self.assertEqual((rc, out), (0, runs[0][1]), err)
        self.assertNotIn("seed", err)
        rc, out, err = run("generate", Fixtures.tiny, "-p", "the", "-n", "4", "--temp", "0")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("seed", err)  # greedy: no seed involved

    def test_bench_shipped_model_defaults(self):
        # Default --prefill and --decode (one repetition, no warm-up: a 512-token prefill
        # takes seconds in a sanitizer build).
        rc, out, err = run("bench", KJV, "--reps", "1", "--warmup", "0", "--threads", "2")
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        self.assertRegex(out, r"memory     weights 1[12]\.\d MiB")  # not 0.0 (the CPU's host bytes)
        rate = re.search(r"prefill    512 tokens: .* ([\d.]+) ([GT])FLOP/s", out)
        self.assertIsNotNone(rate, out)
        self.assertGreater(float(rate.group(1)), 0)  # was 0.0 TFLOP/s on the CPU
        self.assertRegex(out, r"decode     batch 1 from position 0, 128 steps")

    def test_bench_small_context(self):
        rc, out, err = run("bench", Fixtures.tiny, "--reps", "1", "--warmup", "1", "--threads", "1")
        self.assertEqual(rc, 0, err)
        self.assertIn("gpt bench: prefill 64 tokens (the model's context length; the default is 512)", err)
        self.assertIn("gpt bench: decode 63 steps (what fits the model's context of 64 after position 0 and 1 warm-up", err)
        self.assertIn("prefill    64 tokens", out)
        rc, out, err = run("bench", Fixtures.tiny, "--prefill", "100")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--prefill 100 needs 100 positions, the context of %s is 64: pass --prefill 64 or less" % Fixtures.tiny,
                      err)
        rc, out, err = run("bench", Fixtures.tiny, "--pos", "60", "--decode", "10")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--pos 60 and --decode 10 need 73 positions", err)
        self.assertIn("pass --decode 1 or less", err)

    def test_tf32_flag(self):
        # --tf32 (generate, chat) lets a GPU's f32 GEMMs use TF32; on the CPU it changes nothing.
        args = ["generate", Fixtures.tiny, "-p", "the", "-n", "6", "--temp", "0", "--device", "cpu"]
        rc, want, err = run(*args)
        self.assertEqual(rc, 0, err)
        rc, out, err = run(*(args + ["--tf32"]))
        self.assertEqual((rc, out), (0, want), err)
        for cmd in ("generate", "chat"):
            rc, out, err = run(cmd, "--help")
            self.assertEqual(rc, 0, err)
            self.assertIn("--tf32", out)

    def test_bench_json_escapes_the_name(self):
        m = Path(Fixtures.dir.name) / 'q"uote\\.gpt'
        m.write_bytes(Fixtures.tiny_data)
        rc, out, err = run("bench", m, "--reps", "1", "--prefill", "8", "--decode", "4", "--json")
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertEqual(j["model"], str(m))
        self.assertGreater(j["weight_bytes"], 0)


def nanogpt_params(n_layer, d, vocab, block, bias):
    """nanoGPT model.py's parameter count (all of them): wte (lm_head tied to it), wpe, per block
    ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc (4 d), mlp.c_proj, then ln_f; biases only with
    bias=True."""
    def linear(n_in, n_out):
        return n_in * n_out + (n_out if bias else 0)
    norm = d * (2 if bias else 1)
    per_block = 2 * norm + linear(d, 3 * d) + linear(d, d) + linear(d, 4 * d) + linear(4 * d, d)
    return vocab * d + block * d + n_layer * per_block + norm


class CharacterShapes(unittest.TestCase):
    """`gpt bench --synthetic` shapes of bench/compare_nanogpt.py (issue 21) against nanoGPT's
    model: the parameter count of its GPT class and the context (block_size)."""

    def test_nanogpt_count_matches_nanogpt(self):
        # nanoGPT prints "number of parameters: 10.65M" for train_shakespeare_char.py (bias=False,
        # wpe left out of the count).
        self.assertEqual(round((nanogpt_params(6, 384, 65, 256, False) - 256 * 384) / 1e6, 2), 10.65)

    def test_synthetic_character_shapes(self):
        shapes = {"nanogpt-shakespeare-char": (6, 384, 65, 256), "char-dense-768": (12, 768, 95, 256)}
        for name, (layers, d, vocab, block) in shapes.items():
            with self.subTest(name=name):
                rc, out, err = run("bench", "--synthetic", name, "--device", "cpu", "--threads", "1", "--reps", "1",
                                   "--warmup", "0", "--prefill", "4", "--decode", "2", "--json")
                self.assertEqual(rc, 0, err)
                # A converted nanoGPT checkpoint with bias=False holds zero biases, so the file
                # (and the synthetic shape) has nanoGPT's bias=True count.
                self.assertEqual(json.loads(out)["params"], nanogpt_params(layers, d, vocab, block, True))
                rc, out, err = run("bench", "--synthetic", name, "--device", "cpu", "--pos", str(block - 2), "--decode", "4")
                self.assertEqual((rc, out), (2, ""), err)
                self.assertIn("the context of %s is %d" % (name, block), err)


def moe_params(layers, d, heads, kv_heads, experts, ff_expert, vocab, whole_qk_norm):
    """Parameters of a mixtral / olmoe shape from docs/FORMAT.md's tensor table: embedding and
    untied head, per layer two norms, fused q|k|v, output, router, stacked expert gate|up and
    down (OLMoE: its q and k norm vectors), the final norm."""
    hd = d // heads
    q, kv = heads * hd, kv_heads * hd
    per_layer = 2 * d + (q + 2 * kv) * d + d * q + experts * d + experts * 2 * ff_expert * d + experts * d * ff_expert
    if whole_qk_norm:
        per_layer += q + kv
    return 2 * vocab * d + layers * per_layer + d


class MoeShapes(unittest.TestCase):
    """`gpt bench --synthetic` mixture-of-experts shapes (issue 19): the tiny ones run on the CPU
    in every weight type (q4: the routers stay float), with the parameter count of the table."""

    def test_tiny_moe_shapes_run(self):
        shapes = {"moe-tiny": (2, 64, 4, 2, 4, 96, 95, False), "olmoe-tiny": (2, 64, 4, 4, 16, 32, 95, True)}
        for name, shape in shapes.items():
            for dtype in ("f32", "bf16", "q8", "q4"):
                with self.subTest(name=name, dtype=dtype):
                    rc, out, err = run("bench", "--synthetic", name, "--device", "cpu", "--dtype", dtype, "--threads", "2",
                                       "--reps", "1", "--warmup", "0", "--prefill", "9", "--decode", "3", "--json")
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(json.loads(out)["params"], moe_params(*shape))

    def test_info_quantize_generate(self):
        """A mixtral fixture: `gpt info` names the experts and counts the active parameters,
        `gpt quantize` keeps the routers f32 and quantizes the stacked experts, and the quantized
        file generates."""
        with tempfile.TemporaryDirectory() as d:
            src, q4 = Path(d) / "moe.gpt", Path(d) / "moe-q4.gpt"
            layers, dm, heads, kv_heads, experts, used, ffe = 2, 64, 4, 2, 6, 2, 32
            fixture.write_model(src, arch="mixtral", n_layers=layers, d_model=dm, n_heads=heads, n_kv_heads=kv_heads,
                                n_experts=experts, n_experts_used=used, d_ff_expert=ffe)
            rc, out, err = run("info", src)
            self.assertEqual(rc, 0, err)
            self.assertIn("experts:    6 per MoE layer, 2 used per token, width 32", out)
            total = int(re.search(r"^parameters: (\d+)", out, re.M).group(1))
            expert_params = layers * experts * 3 * dm * ffe
            active = total - expert_params + expert_params * used // experts
            self.assertIn("; %d parameters" % active, out)
            rc, out, err = run("quantize", src, q4, "--dtype", "q4")
            self.assertEqual(rc, 0, err)
            rc, out, err = run("info", q4)
            self.assertEqual(rc, 0, err)
            dtypes = dict(re.findall(r"^  (blk\.\d+\.\S+)\s+(\S+)", out, re.M))
            self.assertEqual(dtypes["blk.0.ffn_router.weight"], "f32")
            self.assertEqual(dtypes["blk.1.ffn_experts_gate_up.weight"], "q4/32")
            self.assertEqual(dtypes["blk.1.ffn_experts_down.weight"], "q4/32")
            rc, out, err = run("generate", q4, "-p", "Hello", "-n", "8", "--temp", "0", "--threads", "2")
            self.assertEqual(rc, 0, err)
            self.assertTrue(out.startswith("Hello"), out)


TURN = re.compile(r"^gpt: turn (\d+): conversation (\d+) tokens, (\d+) reused from the cache, (\d+) run;", re.M)


# ChatML, as a fixture model's template (its vocabulary has no ChatML tokens: they are text).
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class Chat(unittest.TestCase):
    """`gpt chat` (issue 18): refusal without a template, the --plain loop on the shipped model
    checked against `gpt generate` on the whole transcript (so the KV-cache reuse changes
    nothing), /reset, /exit, a full context."""

    # Greedy, one line per answer (--stop "\n"), short answers.
    OPTS = ["--plain", "--temp", "0", "-n", "16", "--stop", "\n", "--threads", "2"]

    def generate_answer(self, transcript):
        """The reference: a fresh context, the whole transcript as the prompt."""
        rc, out, err = run("generate", KJV, "-p", transcript, "--temp", "0", "-n", "16", "--stop", "\n", "--stop",
                           "\nUser:", "--threads", "2")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith(transcript), out)
        return out[len(transcript):-1]  # the continuation, without generate's final newline

    def test_no_template_refused(self):
        # The shipped model has no chat template: gpt chat says so and names --plain.
        rc, out, err = run_input(["chat", KJV], "Hello\n")
        self.assertEqual((rc, out), (1, ""), err)
        self.assertIn("chat template", err)
        self.assertIn("--plain", err)

    def test_plain_multi_turn_matches_generate(self):
        said = ["And God said", "Who made the heaven?", "And the LORD spake unto Moses"]
        rc, out, err = run_input(["chat", KJV, "--verbose"] + self.OPTS, "\n".join(said) + "\n")
        self.assertEqual(rc, 0, err)
        answers = out.split("\n")
        self.assertEqual(len(answers), len(said) + 1, out)  # one line each, then the end
        self.assertEqual(answers[-1], "")
        transcript = ""
        for i, (user, answer) in enumerate(zip(said, answers)):
            transcript += "User: " + user + "\nAssistant:"
            self.assertEqual(answer, self.generate_answer(transcript), "turn %d" % (i + 1))
            transcript += answer + "\n"
        turns = [tuple(map(int, m)) for m in TURN.findall(err)]
        self.assertEqual([t[0] for t in turns], [1, 2, 3], err)
        for number, total, reused, ran in turns:
            self.assertEqual(total, reused + ran)
            if number == 1:
                self.assertEqual(reused, 0)
            else:  # everything before this turn's text was in the cache (but the last answer's last token)
                prev_total = turns[number - 2][1]
                self.assertGreater(reused, prev_total)
                self.assertLess(ran, 24, err)  # the new message, not the history

    def test_reset_and_exit(self):
        rc, out, err = run_input(["chat", KJV, "--verbose"] + self.OPTS,
                                 "And God said\nWho made the heaven?\n/reset\nAnd God said\n/exit\nnot read\n")
        self.assertEqual(rc, 0, err)
        answers = out.split("\n")[:-1]
        self.assertEqual(len(answers), 3, out)
        self.assertEqual(answers[2], answers[0])  # a fresh conversation
        turns = [tuple(map(int, m)) for m in TURN.findall(err)]
        self.assertEqual(turns[2][2], 0, err)  # nothing reused after /reset
        self.assertEqual(turns[2][1], turns[0][1])

    def test_context_full(self):
        rc, out, err = run_input(["chat", KJV, "--max-seq", "24"] + self.OPTS,
                                 " ".join(["word"] * 40) + "\nAnd God said\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("the context holds 24: /reset to start over", err)
        self.assertEqual(len(out.split("\n")), 2, out)  # only the second message was answered

    def test_hostile_input(self):
        # A NUL, invalid UTF-8, a line over 1 MiB (ignored, said so): no crash, one answer each.
        text = "a\x00b \udcff\n" + "x" * (1 << 20 | 5) + "\nAnd God said\n"
        rc, out, err = run_input(["chat", KJV] + self.OPTS, text.encode("utf-8", "surrogateescape").decode("latin-1"))
        self.assertEqual(rc, 0, err)
        self.assertIn("a line longer than 1048576 bytes was ignored", err)
        self.assertEqual(len(out.split("\n")), 3, out)

    def test_generate_stop(self):
        args = ["generate", KJV, "-p", "And God said", "--temp", "0", "-n", "40", "--threads", "2"]
        rc, full, err = run(*args)
        self.assertEqual(rc, 0, err)
        cont = full[len("And God said"):-1]
        stop = cont[len(cont) // 2:len(cont) // 2 + 5]
        rc, out, err = run(*(args + ["--stop", stop]))
        self.assertEqual(rc, 0, err)
        shown = out[len("And God said"):-1]
        at = cont.index(stop)
        self.assertTrue(cont.startswith(shown), (cont, shown))
        self.assertLessEqual(len(shown), at)
        self.assertGreater(len(shown), at - 12)  # at most the match's first token is dropped before it

    def test_usage(self):
        rc, out, err = run("chat")
        self.assertEqual((rc, out), (2, ""), err)
        rc, out, err = run("chat", KJV, "--frequency-penalty", "nan")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("--frequency-penalty", err)
        rc, out, err = run("chat", KJV, "--logit-bias", "12")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("ID=BIAS", err)
        rc, out, err = run("chat", Fixtures.spm, "--plain", "--logit-bias", "999999=1")
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("outside the model's vocabulary", err)

    def test_template_chat(self):
        # A model whose file carries a chat template: three turns, each reusing the cache for
        # everything before its new message; a line of invalid UTF-8 (and answers from random
        # weights, which can be invalid UTF-8 too) does not stop the conversation.
        with tempfile.TemporaryDirectory() as d:
            model = Path(d) / "chat.gpt"
            fixture.write_model(str(model), chat_template=CHATML, context_length=512)
            said = b"Hello!\n\xff\xfe broken \xc3\n" + "What now, Grüße?\n".encode()
            rc, out, err = run_input(["chat", model, "--verbose", "--temp", "0", "-n", "8", "--threads", "2",
                                      "--system", "Be brief."], said)
            self.assertEqual(rc, 0, err)
            turns = [tuple(map(int, m)) for m in TURN.findall(err)]
            self.assertEqual([t[0] for t in turns], [1, 2, 3], err)
            for number, total, reused, ran in turns:
                self.assertEqual(total, reused + ran)
                if number > 1:  # the system prompt and every earlier user turn came from the cache
                    self.assertGreater(reused, turns[0][1] // 2, err)
                    self.assertLess(ran, total - reused + 1)


class Quantize(unittest.TestCase):
    """Issue 17: `gpt quantize`, `gpt info` on quantized files, `gpt perplexity --compare`."""

    def test_quantize_info_perplexity(self):
        d = Path(Fixtures.dir.name)
        text = d / "verses.txt"
        text.write_text("In the beginning God created the heaven and the earth.\n"
                        "And the earth was without form, and void; and darkness was upon the face of the deep.\n" * 3)
        kl = {}
        for dtype, group in (("q8", "64"), ("q4", "32")):
            out = d / ("kjv-%s.gpt" % dtype)
            rc, so, err = run("quantize", KJV, out, "--dtype", dtype, "--group", group)
            self.assertEqual(rc, 0, err)
            # The rule (docs/FORMAT.md 5.1): every matrix of 256 columns (embedding, head, and per
            # layer qkv, out, gate_up: 2 + 6 x 3); ffn_down has 688 and the 13 norms are vectors.
            self.assertIn("quantized   20 of 39 tensors to %s, group %s" % (dtype, group), so)
            rc, so, err = run("info", out)
            self.assertEqual(rc, 0, err)
            self.assertIn("%s/%s" % (dtype, group), so)
            self.assertIn("checksums:  all 39 tensors OK", so)
            if dtype == "q4":
                # tok_emb [4096, 256] q4/32: 4096 * 128 bytes + 4096 * 8 scales * 2 bytes.
                self.assertRegex(so, r"tok_emb\.weight\s+q4/32\s+4096 x 256\s+\d+\s+576\.00 KiB")
            rc, so, err = run("perplexity", out, text, "--compare", KJV, "--threads", "2")
            self.assertEqual(rc, 0, err)
            kl[dtype] = float(re.search(r"mean KL\s+([0-9.e+-]+)", so).group(1))
            top1 = float(re.search(r"top-1\s+([0-9.]+)%", so).group(1))
            self.assertGreater(kl[dtype], 0.0, so)
            self.assertGreaterEqual(top1, 80.0, so)
        self.assertLess(kl["q8"], kl["q4"])  # 8 bits lose less than 4
        rc, so, err = run("perplexity", KJV, text, "--compare", KJV, "--threads", "2")
        self.assertEqual(rc, 0, err)
        self.assertIn("mean KL     0.000000", so)
        self.assertIn("top-1       100.00% agreement", so)

    def test_quantize_keep_embeddings(self):
        out = Path(Fixtures.dir.name) / "kjv-keep.gpt"
        rc, so, err = run("quantize", KJV, out, "--dtype", "q4", "--keep-embeddings")
        self.assertEqual(rc, 0, err)
        self.assertIn("quantized   18 of 39 tensors to q4, group 32", so)  # 20 less tok_emb and lm_head
        rc, so, err = run("info", out)
        self.assertEqual(rc, 0, err)
        self.assertRegex(so, r"tok_emb\.weight\s+f16\s")
        self.assertRegex(so, r"lm_head\.weight\s+f16\s")
        self.assertRegex(so, r"blk\.0\.attn_qkv\.weight\s+q4/32\s")

    def test_quantize_refusals(self):
        d = Path(Fixtures.dir.name)
        for args, needle in ((["--group", "32"], "--dtype q8 or --dtype q4"), (["--dtype", "f16"], "--dtype q8 or --dtype q4"),
                             (["--dtype", "q4", "--group", "48"], "48"), (["--dtype", "q4", "--group", "256"], "--group"),
                             (["--dtype", "q5"], "q5")):
            with self.subTest(args=args):
                rc, out, err = run("quantize", KJV, d / "x.gpt", *args)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertIn(needle, err)
        self.assertFalse((d / "x.gpt").exists())
        rc, out, err = run("quantize", Fixtures.hostile_tensor, d / "y.gpt", "--dtype", "q8")
        self.assertEqual(rc, 1, err)
        self.assertFalse((d / "y.gpt").exists())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_cli.py PATH/TO/gpt [unittest options]")
    GPT = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
