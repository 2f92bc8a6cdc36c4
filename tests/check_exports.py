#!/usr/bin/env python3
"""check_exports.py LIBGPT_SO GPT_H

The shared library's ABI surface: every exported (dynamic, defined) symbol starts with
gpt_, every GPT_API function declared in the header is exported, and the soname is
libgpt.so.<GPT_VERSION_MAJOR> (the header's). Needs nm and readelf (binutils)."""
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    lib, header = sys.argv[1], sys.argv[2]
    text = open(header, encoding="utf-8").read()
    major = re.search(r"^#define GPT_VERSION_MAJOR (\d+)", text, re.M)
    if not major:
        print(f"FAIL: no GPT_VERSION_MAJOR in {header}")
        return 1
    declared = set(re.findall(r"GPT_API\s[^;{]*?\b(gpt_\w+)\s*\(", text))

    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    exported = set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            exported.add(parts[2].split("@")[0])
    failures = 0
    stray = sorted(s for s in exported if not s.startswith("gpt_"))
    for s in stray:
        print(f"FAIL: exported symbol outside the gpt_ namespace: {s}")
    failures += len(stray)
    missing = sorted(declared - exported)
    for s in missing:
        print(f"FAIL: {s} is declared GPT_API in gpt.h but not exported")
    failures += len(missing)
    undeclared = sorted(s for s in exported if s.startswith("gpt_") and s not in declared)
    for s in undeclared:
        print(f"FAIL: {s} is exported but not declared in gpt.h")
    failures += len(undeclared)

    dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    soname = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    want = f"libgpt.so.{major.group(1)}"
    if not soname or soname.group(1) != want:
        print(f"FAIL: soname is {soname.group(1) if soname else 'missing'}, expected {want}")
        failures += 1

    print(f"{len(exported)} exported symbols, {len(declared)} declared in gpt.h, soname "
          f"{soname.group(1) if soname else '?'}")
    if failures:
        print(f"0 passed, {failures} failed")
        return 1
    print("exports: 1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
