#!/usr/bin/env python3
"""bench/load_memory.py MODEL [options] - what loading and running MODEL costs in memory, per
weights mode (issue 22): `gpt bench MODEL --weights MODE --json` runs while this script samples
the process's resident memory every 50 ms (/proc/PID/status: RssAnon, the process's own
memory; RssFile, mapped file pages such as the weight file) and its GPU memory every 100 ms
(nvidia-smi --query-compute-apps, which includes the CUDA context). One table is printed:

  load s, load to first token s, decode tokens/s (from gpt bench's JSON);
  RSS during the load (peak) and at rest (median of the decode half), anonymous and file;
  GPU memory of the process (peak), and what gpt reports: weights on the device, the context.

Usage on the GPU machine, from the repository root after building (meson setup build;
ninja -C build):
  bench/load_memory.py /tmp/tinyllama-f16.gpt --make tinyllama-1.1b
(--make SHAPE writes MODEL with `gpt synth SHAPE MODEL --dtype f16` first when it is missing:
TinyLlama's shape is a 2.2 GB f16 file.) The file is read once before the runs, so every mode
loads it page-cached. Modes: device, host (gpt's --weights; `default` runs without the flag).
Needs only Python 3 (nvidia-smi when there is a GPU).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

GIB = 1024.0 ** 3


def read_status(pid):
    """RssAnon and RssFile of pid in bytes, or None once the process is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            text = f.read()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("RssAnon", "RssFile", "RssShmem"):
            out[key] = int(rest.split()[0]) * 1024
    return out if "RssAnon" in out else None


def gpu_used(pid):
    """The process's GPU memory in bytes (nvidia-smi), or None when unknown."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in r.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
            return int(parts[1]) * 1024 * 1024
    return 0


def run_mode(args, mode):
    cmd = [args.gpt, "bench", args.model, "--device", args.device, "--json", "--prefill", str(args.prefill),
           "--decode", str(args.decode)]
    if mode != "default":
        cmd += ["--weights", mode]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    rss, gpu = [], []  # (seconds since start, sample)
    done = threading.Event()

    def sample_rss():
        while not done.is_set():
            s = read_status(proc.pid)
            if s is not None:
                rss.append((time.monotonic() - t0, s))
            time.sleep(0.05)

    def sample_gpu():
        while not done.is_set() and shutil.which("nvidia-smi"):
            g = gpu_used(proc.pid)
            if g is not None:
                gpu.append((time.monotonic() - t0, g))
            time.sleep(0.1)

    threads = [threading.Thread(target=sample_rss, daemon=True), threading.Thread(target=sample_gpu, daemon=True)]
    for t in threads:
        t.start()
    out, err = proc.communicate()
    done.set()
    for t in threads:
        t.join()
    if proc.returncode != 0:
        if mode != "default" and "--weights" in err:
            return {"mode": mode, "error": "this gpt has no --weights %s (jetson-load's flag): %s" % (mode, err.strip())}
        return {"mode": mode, "error": "gpt bench exited %d: %s" % (proc.returncode, err.strip()[-400:])}
    bench = json.loads(out)
    # The load phase: up to the first token (plus one sample period); at rest: the last half of
    # the run, which is decoding.
    load_end = bench["load_to_first_token_ms"] / 1e3 + 0.1
    during = [s for t, s in rss if t <= load_end] or [s for _, s in rss[:1]]
    rest = [s for _, s in rss[len(rss) // 2:]] or during

    def peak(samples, *keys):
        return max((sum(s.get(k, 0) for k in keys) for s in samples), default=0)

    def median(samples, *keys):
        return statistics.median([sum(s.get(k, 0) for k in keys) for s in samples]) if samples else 0

    return {
        "mode": mode,
        "load_s": bench["load_ms"] / 1e3,
        "first_token_s": bench["load_to_first_token_ms"] / 1e3,
        "decode_tps": bench["decode"]["tokens_per_s"],
        "rss_load_peak": peak(during, "RssAnon", "RssFile"),
        "anon_load_peak": peak(during, "RssAnon"),
        "file_load_peak": peak(during, "RssFile"),
        "rss_rest": median(rest, "RssAnon", "RssFile"),
        "anon_rest": median(rest, "RssAnon"),
        "file_rest": median(rest, "RssFile"),
        "rss_peak": peak([s for _, s in rss], "RssAnon", "RssFile"),
        "gpu_peak": max((g for _, g in gpu), default=None),
        "gpu_rest": statistics.median([g for _, g in gpu[len(gpu) // 2:]]) if gpu else None,
        "model_device_bytes": bench.get("model_device_bytes"),
        "model_host_bytes": bench.get("model_host_bytes"),
        "context_bytes": bench.get("context_bytes"),
        "samples": len(rss),
    }


def check_targets(rows, file_bytes):
    """Issue 22's targets, PASS/FAIL with the numbers (GB = 10^9 bytes, as the issue writes them)."""
    by = {r["mode"]: r for r in rows if "error" not in r}
    gb = 1e9
    out = []
    d, h = by.get("device"), by.get("host")
    if d:
        out.append(("device mode: RSS peak during the load <= 0.6 GB", d["rss_load_peak"] <= 0.6 * gb,
                    "%.2f GB" % (d["rss_load_peak"] / gb)))
        out.append(("device mode: RSS at rest <= 0.5 GB (0.44 GB before issue 22)", d["rss_rest"] <= 0.5 * gb,
                    "%.2f GB" % (d["rss_rest"] / gb)))
        out.append(("device mode: load <= 1.30 s (H100, page-cached, before issue 22)", d["load_s"] <= 1.30,
                    "%.2f s" % d["load_s"]))
    if h:
        limit = file_bytes + 0.5 * gb
        out.append(("host mode: RSS peak <= file + 0.5 GB", h["rss_peak"] <= limit,
                    "%.2f GB, limit %.2f GB" % (h["rss_peak"] / gb, limit / gb)))
        out.append(("host mode: RSS at rest <= file + 0.5 GB", h["rss_rest"] <= limit,
                    "%.2f GB, limit %.2f GB" % (h["rss_rest"] / gb, limit / gb)))
        out.append(("host mode: load <= 1.30 s", h["load_s"] <= 1.30, "%.2f s" % h["load_s"]))
    if d and h and d["gpu_peak"] is not None and h["gpu_peak"] is not None:
        # Device mode's GPU memory less its weights is the context + the CUDA context; host mode
        # may add only its f32 vectors (64 MiB of slack).
        limit = d["gpu_peak"] - (d["model_device_bytes"] or 0) + (h["model_device_bytes"] or 0) + (64 << 20)
        out.append(("host mode: GPU memory <= KV cache + scratch + CUDA context", h["gpu_peak"] <= limit,
                    "%.2f GB, limit %.2f GB" % (h["gpu_peak"] / gb, limit / gb)))
    for name, ok, numbers in out:
        print("%s  %s: %s" % ("PASS" if ok else "FAIL", name, numbers))


def gib(v):
    return "-" if v is None else "%.2f" % (v / GIB)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--gpt", default="build/tools/gpt", help="the gpt tool (default build/tools/gpt)")
    ap.add_argument("--device", default="cuda", help="gpt's --device (default cuda)")
    ap.add_argument("--modes", default="device,host", help="comma-separated: device, host, default")
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--decode", type=int, default=256)
    ap.add_argument("--make", metavar="SHAPE", help="write MODEL with `gpt synth SHAPE MODEL --dtype f16` if missing")
    ap.add_argument("--json", action="store_true", help="also print each mode's numbers as JSON")
    args = ap.parse_args()
    if args.make and not os.path.exists(args.model):
        subprocess.run([args.gpt, "synth", args.make, args.model, "--dtype", "f16"], check=True)
    size = os.path.getsize(args.model)
    with open(args.model, "rb") as f:  # page-cached for every mode
        while f.read(1 << 24):
            pass
    rows = [run_mode(args, m.strip()) for m in args.modes.split(",") if m.strip()]
    print("model %s, %.2f GiB file, device %s" % (args.model, size / GIB, args.device))
    head = ("mode", "load s", "1st tok s", "decode t/s", "RSS load peak", "(anon", "file)", "RSS at rest", "(anon",
            "file)", "GPU peak", "GPU rest", "weights dev", "context")
    print(("%-8s" + " %10s" * (len(head) - 1)) % head)
    for r in rows:
        if "error" in r:
            print("%-8s %s" % (r["mode"], r["error"]))
            continue
        print(("%-8s %10.2f %10.2f %10.1f" + " %10s" * 10) % (
            r["mode"], r["load_s"], r["first_token_s"], r["decode_tps"], gib(r["rss_load_peak"]), gib(r["anon_load_peak"]),
            gib(r["file_load_peak"]), gib(r["rss_rest"]), gib(r["anon_rest"]), gib(r["file_rest"]), gib(r["gpu_peak"]),
            gib(r["gpu_rest"]), gib(r["model_device_bytes"]), gib(r["context_bytes"])))
    print("(GiB; RSS = RssAnon + RssFile of the process, sampled every 50 ms; load = until the first token;"
          " at rest = median of the decode half; GPU = nvidia-smi's per-process memory, CUDA context included)")
    check_targets(rows, size)
    if args.json:
        for r in rows:
            print(json.dumps(r))
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
