#!/usr/bin/env python3
"""Streams a completion with the Python binding.

    python3 examples/example.py MODEL.gpt ["prompt"] [N]

Uses the installed `libgpt` package (pip install bindings/python, or meson install), or the
source checkout's bindings/python when it is not installed. The shared library is found as
docs/BINDINGS.md says (GPT_LIBRARY, the installed library, the checkout's build/lib).
"""
import os
import sys
import time

try:
    import libgpt
except ImportError:  # run from a source checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import libgpt


def main(argv):
    if len(argv) < 2:
        print("usage: example.py MODEL [PROMPT] [N]", file=sys.stderr)
        return 2
    prompt = argv[2] if len(argv) > 2 else "In the beginning"
    n = int(argv[3]) if len(argv) > 3 else 48
    try:
        with libgpt.Model(argv[1]) as model:  # device: the first GPU if any, else the CPU
            print(model.info, file=sys.stderr)
            with model.context(max_seq=min(512, model.info.context_length)) as ctx:
                print(prompt, end="", flush=True)
                start = time.perf_counter()
                generation = ctx.generate(prompt, max_tokens=n, temperature=0.8, seed=1)
                for piece in generation:
                    print(piece, end="", flush=True)
                seconds = time.perf_counter() - start
                print()
                print("%d tokens in %.3f s: %.1f tokens/s" % (len(generation.tokens), seconds,
                                                            len(generation.tokens) / seconds), file=sys.stderr)
    except libgpt.GptError as e:
        print("error: %s (status %d)" % (e.message, e.status), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
