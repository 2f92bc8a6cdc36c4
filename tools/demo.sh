#!/usr/bin/env bash
# demo.sh - the README's first command: installs the Debian packages a fresh machine lacks,
# builds libgpt (with CUDA for this machine's GPU when nvcc and a GPU are present), and
# generates text with the bundled model, on the GPU if there is one, else on the CPU.
#   tools/demo.sh ["prompt"] [extra `gpt generate` options]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(g++ meson ninja-build pkg-config zlib1g-dev libcmocka-dev nlohmann-json3-dev)
if command -v dpkg >/dev/null 2>&1; then
    missing=()
    for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if ((${#missing[@]})); then
        sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        echo "demo: installing ${missing[*]}"
        $sudo apt-get update -q && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
else
    echo "demo: not a Debian/Ubuntu system: make sure a C++17 compiler, meson, ninja, pkg-config and zlib are installed"
fi

if [ ! -d build/meson-private ]; then
    opts=()
    [ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
    # Compile the kernels for this machine's GPU only: much faster than the portable list.
    if command -v nvcc >/dev/null 2>&1 && command -v nvidia-smi >/dev/null 2>&1; then
        cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d '. ')
        [ -n "$cap" ] && opts+=("-Dcuda-archs=$cap")
    fi
    meson setup build "${opts[@]}"
fi
ninja -C build

prompt="${1:-And God said}"
shift || true
exec build/tools/gpt generate models/kjv-llama.gpt -p "$prompt" -n 120 --seed 42 "$@"
