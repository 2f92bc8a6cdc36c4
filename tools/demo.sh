#!/usr/bin/env bash
# demo.sh - the README's first command: builds the `gpt` tool and generates text with the
# bundled model (models/kjv-llama.gpt), on the GPU if the build has CUDA and one is there.
#   tools/demo.sh ["prompt"] [extra `gpt generate` options]
#
# What it needs is decided by trying it, not by package names: a C and a C++17 compiler,
# meson >= 1.0, ninja and zlib are required; pkg-config with cmocka (the tests) and
# nlohmann-json (`gpt convert`) are optional. Debian packages are installed (apt-get) only for
# what is missing, so a machine that has everything (from pip, from source) never calls
# apt-get and works offline. When something required cannot be installed it says what and how.
#
# CUDA: built only when this machine has an NVIDIA GPU (nvidia-smi lists one, /dev/nvidia0, or
# a Jetson) and nvcc, and then only for that GPU's arch (minutes instead of the default list's
# much longer build); else CPU-only. Environment:
#   GPT_CUDA=1        build the CUDA backend even without a GPU (GPT_CUDA=0: never)
#   GPT_CUDA_ARCHS    the archs to build for, e.g. "87;90" (default: this machine's GPU, or,
#                     with GPT_CUDA=1 and no GPU, Meson's default list: slow)
# build/ is configured by this script the first time (it records its options in
# build/demo-options); later runs reuse it, reconfigure it when they would choose other options,
# and leave a build/ configured by hand as it is, saying what it uses.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "demo: $*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }
start=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- what the build needs, tried for real
first_of() { for c in "$@"; do have "$c" && { echo "$c"; return 0; }; done; return 1; }
detect() {
    missing_req=() missing_opt=() pkgs=()
    CC_CMD=${CC:-$(first_of cc gcc clang || true)}
    CXX_CMD=${CXX:-$(first_of c++ g++ clang++ || true)}
    NINJA_CMD=$(first_of ninja ninja-build samu || true)
    have_cxx=0 have_cc=0
    if [ -n "$CXX_CMD" ]; then
        printf '#include <optional>\nint main() { std::optional<int> x; return x.has_value(); }\n' >"$tmp/t.cpp"
        # shellcheck disable=SC2086 # CXX may hold a command with arguments
        $CXX_CMD -std=c++17 "$tmp/t.cpp" -o "$tmp/t" >/dev/null 2>&1 && have_cxx=1
    fi
    ((have_cxx)) || { missing_req+=("a C++17 compiler (c++)"); pkgs+=(g++); }
    if [ -n "$CC_CMD" ]; then
        printf '#include <zlib.h>\nint main(void) { return zlibVersion() == 0; }\n' >"$tmp/z.c"
        # shellcheck disable=SC2086
        if $CC_CMD "$tmp/z.c" -o "$tmp/z" -lz >/dev/null 2>&1; then
            have_cc=1
        else
            printf 'int main(void) { return 0; }\n' >"$tmp/c.c"
            # shellcheck disable=SC2086
            $CC_CMD "$tmp/c.c" -o "$tmp/c" >/dev/null 2>&1 && have_cc=1
            ((have_cc)) && { missing_req+=("zlib (zlib.h and libz)"); pkgs+=(zlib1g-dev); }
        fi
    fi
    if ! ((have_cc)); then
        missing_req+=("a C compiler (cc)")
        pkgs+=(gcc zlib1g-dev) # zlib cannot be tried without a compiler
    fi
    meson_version=$( (meson --version 2>/dev/null || true) | head -n1)
    if [ -z "$meson_version" ]; then
        missing_req+=("meson (>= 1.0)"); pkgs+=(meson)
    elif [ "$(printf '1.0\n%s\n' "$meson_version" | sort -V | head -n1)" != "1.0" ]; then
        missing_req+=("meson >= 1.0 (found $meson_version)"); pkgs+=(meson)
    fi
    [ -n "$NINJA_CMD" ] || { missing_req+=("ninja"); pkgs+=(ninja-build); }
    # Optional: the tests (cmocka, found through pkg-config as the build does) and the converter.
    have_tests=0 have_convert=0
    if have pkg-config; then
        pkg-config --exists cmocka && have_tests=1
    else
        missing_opt+=("pkg-config"); pkgs+=(pkg-config)
    fi
    ((have_tests)) || { missing_opt+=("cmocka (the tests)"); pkgs+=(libcmocka-dev); }
    if have pkg-config && pkg-config --exists nlohmann_json; then
        have_convert=1
    elif ((have_cxx)); then
        # shellcheck disable=SC2086
        echo '#include <nlohmann/json.hpp>' | $CXX_CMD -std=c++17 -E -x c++ - >/dev/null 2>&1 && have_convert=1
    fi
    ((have_convert)) || { missing_opt+=("nlohmann-json (gpt convert)"); pkgs+=(nlohmann-json3-dev); }
    return 0
}

detect
if ((${#pkgs[@]})); then
    say "missing: $(printf '%s, ' "${missing_req[@]}" "${missing_opt[@]}" | sed 's/, $//')"
    sudo=""
    [ "$(id -u)" -ne 0 ] && have sudo && sudo="sudo"
    if have apt-get && { [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; }; then
        mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
        say "installing Debian packages: ${pkgs[*]}"
        if ! { $sudo apt-get update -q &&
               $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}"; }; then
            say "apt-get could not install them (offline, or another package source is needed)"
        fi
        hash -r
        detect
    fi
fi
if ((${#missing_req[@]})); then
    say "cannot build: missing $(printf '%s, ' "${missing_req[@]}" | sed 's/, $//')"
    if have apt-get; then
        say "install them (Debian/Ubuntu): sudo apt-get install $(printf '%s\n' "${pkgs[@]}" | sort -u | paste -sd ' ' -)"
    else
        say "install them with this system's package manager"
    fi
    say "  (meson and ninja also come from pip: python3 -m pip install --user meson ninja)"
    exit 1
fi
((have_tests)) || say "building without the tests: cmocka (Debian: libcmocka-dev) and pkg-config are needed for them"
((have_convert)) || say "building without gpt convert: it needs nlohmann-json (Debian: nlohmann-json3-dev)"

# ---- CUDA or not
cuda=disabled archs="" why=""
[ -x /usr/local/cuda/bin/nvcc ] && ! have nvcc && PATH="/usr/local/cuda/bin:$PATH"
gpu_archs() { # compute capabilities of this machine's GPUs ("90", "87;90"), empty if unknown
    if have nvidia-smi; then
        nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d '. ' | grep -E '^[0-9]+$' | sort -u |
            paste -sd ';' - || true
    elif [ -r /proc/device-tree/compatible ]; then # Jetson without nvidia-smi
        case "$(tr '\0' ' ' </proc/device-tree/compatible)" in
            *tegra234*) echo 87 ;;
            *tegra194*) echo 72 ;;
        esac
    fi
}
has_gpu() {
    { have nvidia-smi && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; } || [ -e /dev/nvidia0 ] || [ -e /etc/nv_tegra_release ]
}
case "${GPT_CUDA:-auto}" in
    1 | yes | on | enabled)
        have nvcc || { say "GPT_CUDA=${GPT_CUDA}: no nvcc on PATH (nor /usr/local/cuda/bin): install the CUDA toolkit"; exit 1; }
        cuda=enabled archs=${GPT_CUDA_ARCHS:-$(has_gpu && gpu_archs || true)}
        why="asked for (GPT_CUDA=${GPT_CUDA})" ;;
    0 | no | off | disabled)
        why="GPT_CUDA=${GPT_CUDA}" ;;
    auto | "")
        if ! has_gpu; then
            why="no NVIDIA GPU here; GPT_CUDA=1 tools/demo.sh builds CUDA anyway"
        elif ! have nvcc; then
            why="a GPU but no nvcc: install the CUDA toolkit (12 or newer) for the GPU backend"
        else
            archs=${GPT_CUDA_ARCHS:-$(gpu_archs)}
            supported=$(nvcc --list-gpu-code 2>/dev/null | sed -n 's/^sm_//p' | tr '\n' ' ' || true)
            bad=""
            for a in ${archs//;/ }; do
                [ -z "$supported" ] || [[ " $supported " == *" $a "* ]] || bad+=" sm_$a"
            done
            if [ -n "$bad" ]; then
                why="this nvcc cannot compile for the GPU's arch ($bad; it supports $supported)"
            else
                cuda=auto why="this machine's GPU"
            fi
        fi ;;
    *) say "GPT_CUDA=${GPT_CUDA}: use 1 (build CUDA) or 0 (CPU only)"; exit 2 ;;
esac
if [ "$cuda" = disabled ]; then
    say "CPU-only build ($why)"
else
    say "CUDA build for ${archs:-the default arch list} ($why)"
fi
opts=("-Dcuda=$cuda" "-Dcuda-archs=$archs" "-Dtests=$( ((have_tests)) && echo true || echo false)"
      "-Dconvert=$( ((have_convert)) && echo enabled || echo disabled)")

# ---- configure build/ (or reuse it)
describe() { # one line from the build's own summary: CUDA backend, archs, converter, options set
    awk '/^libgpt [0-9]/ { on = 1; next } /^Found ninja/ { on = 0 }
         on && /User defined options/ { opts = 1; next }
         on && index($0, ":") { k = $0; sub(/ *:.*/, "", k); sub(/^ */, "", k); v = $0; sub(/^[^:]*: ?/, "", v)
                                if (opts) o = o " " k "=" v; else s = s (s == "" ? "" : ", ") k " " (v == "" ? "-" : v) }
         END { if (s != "") print "  " s (o == "" ? "" : "; options:" o) }' \
        build/meson-logs/meson-log.txt >&2 2>/dev/null || true
}
if [ -f build/meson-private/coredata.dat ]; then
    if [ -f build/demo-options ]; then
        if [ "$(cat build/demo-options)" != "${opts[*]}" ]; then
            say "build/ was configured by demo.sh with: $(cat build/demo-options)"
            say "reconfiguring it with: ${opts[*]}"
            meson setup --reconfigure build "${opts[@]}" >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; exit 1; }
            echo "${opts[*]}" >build/demo-options
        fi
        say "using build/:"
    else
        say "using build/ as it was configured (not by demo.sh, which would choose ${opts[*]}; rm -rf build to let it):"
    fi
    describe
else
    meson setup build "${opts[@]}"
    echo "${opts[*]}" >build/demo-options
fi
"$NINJA_CMD" -C build tools/gpt
if ((have_tests)); then
    say "build/tools/gpt ready after $((SECONDS - start)) s (\`meson test -C build\` builds and runs the tests)"
else
    say "build/tools/gpt ready after $((SECONDS - start)) s (built without the tests)"
fi

prompt="${1:-And God said}"
shift || true
rm -rf "$tmp" # exec skips the EXIT trap
exec build/tools/gpt generate models/kjv-llama.gpt -p "$prompt" -n 120 --seed 42 "$@"
