#!/usr/bin/env python3
"""Per-kernel GPU time of decode steps, without nsys: torch's profiler (CUPTI) records every
kernel of the process, libgpt's included, so this loads libgpt through bindings/python in a
process that has imported torch and profiles gpt_forward calls.

    python3 bench/kernel_profile.py build/tools/gpt nanogpt-shakespeare-char --dtype bf16

Writes a synthetic model with `gpt synth`, runs a prompt, warms up, then profiles --steps
one-token steps (eager, no CUDA graphs, so every kernel shows) and prints the kernels by
total time; with --prefill N, steps that each encode an N-token prompt afresh instead (the
last-row logits only, as a prompt or a --context-shift re-encode asks). Kernel times under programmatic dependent launch include the wait for the kernel
before them, so they add up to the step. Needs torch with CUDA (the GPU machine has it).
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("gpt", help="the built gpt tool; its libgpt.so is found beside it (../lib)")
    p.add_argument("shape", help="a `gpt bench --synthetic` name")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--prompt", type=int, default=16, help="prompt tokens before the steps")
    p.add_argument("--warmup", type=int, default=100, help="steps before profiling")
    p.add_argument("--steps", type=int, default=50, help="profiled steps")
    p.add_argument("--rows", type=int, default=14, help="kernels listed")
    p.add_argument("--prefill", type=int, default=0, help="profile N-token prompts instead of one-token steps")
    p.add_argument("--tf32", action="store_true", help="f32 models: allow TF32 (as `gpt bench --tf32`)")
    a = p.parse_args()

    build = os.path.dirname(os.path.dirname(os.path.abspath(a.gpt)))
    libdir = os.path.join(build, "lib")
    libs = sorted(f for f in os.listdir(libdir) if f.startswith("libgpt.so.") and os.path.isfile(os.path.join(libdir, f)))
    if not libs:
        sys.exit(f"no libgpt.so.* in {build}/lib (build it: ninja -C {build})")
    os.environ["GPT_LIBRARY"] = os.path.join(libdir, max(libs, key=len))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import torch
    from torch.profiler import ProfilerActivity, profile
    import libgpt

    torch.zeros(1, device="cuda")  # CUPTI attaches to this process's CUDA
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.gpt")
        subprocess.run([a.gpt, "synth", a.shape, path, "--dtype", a.dtype], check=True, stdout=subprocess.DEVNULL)
        with libgpt.Model(path, device=0) as m, libgpt.Context(m, cuda_graphs=False, allow_tf32=a.tf32) as c:
            def step():
                if a.prefill:
                    c.reset()
                    c.forward([5] * a.prefill)
                else:
                    c.forward([5])

            c.forward([1] * a.prompt)
            for _ in range(a.warmup if not a.prefill else 5):
                step()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(a.steps):
                    step()
                torch.cuda.synchronize()
    what = f"{a.prefill}-token prompts" if a.prefill else f"one-token steps from position {a.prompt + a.warmup}"
    print(f"{a.shape} {a.dtype}{' (TF32 allowed)' if a.tf32 else ''}: {a.steps} eager {what}; divide totals by {a.steps} for a step")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=a.rows, max_name_column_width=70))


if __name__ == "__main__":
    main()
