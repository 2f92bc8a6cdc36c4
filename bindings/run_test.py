#!/usr/bin/env python3
"""Runs the bindings' and examples' tests that need more than one command (meson test, suite
'bindings'; see bindings/meson.build and examples/meson.build). Exit status 77 is Meson's
"skipped".

    run_test.py skip REASON
    run_test.py rust CRATE_DIR                      cargo test --offline
    run_test.py rust-example CRATE_DIR MODEL        cargo run --offline --example generate
    run_test.py embed-main OUT MODEL EMBED_C        writes OUT: GPT_EMBED_FILE defined as MODEL's
                                                    absolute path, then #include EMBED_C (so the
                                                    build recompiles embed.c when MODEL changes)
    run_test.py install BUILD_DIR SOURCE_DIR MODEL  meson install into a temporary DESTDIR, then
                                                    build examples/simple.c (and simple.cpp)
                                                    against it with pkg-config and run them (also
                                                    with an rpath and no LD_LIBRARY_PATH), run
                                                    the installed gpt tool as it is, and import
                                                    the installed Python package

Environment (rust): GPT_LIB_DIR, GPT_INCLUDE_DIR, GPT_TEST_MODEL, GPT_TEST_LAYOUT,
CARGO_TARGET_DIR, as bindings/meson.build sets them.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def skip(reason):
    print("SKIP: %s" % reason)
    return SKIP


def run(cmd, **kwargs):
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], **kwargs)


def find_cargo():
    found = shutil.which("cargo")
    if found:
        return found
    homes = [os.environ.get("CARGO_HOME"), os.path.join(os.path.expanduser("~"), ".cargo")]
    for home in homes:
        if home and os.access(os.path.join(home, "bin", "cargo"), os.X_OK):
            return os.path.join(home, "bin", "cargo")
    return None


def cargo_env(cargo):
    env = dict(os.environ)
    # rustup's cargo finds rustc beside it; make sure that directory is on PATH.
    env["PATH"] = os.path.dirname(cargo) + os.pathsep + env.get("PATH", "")
    env.setdefault("CARGO_TERM_COLOR", "never")
    lib_dir = env.get("GPT_LIB_DIR")
    if lib_dir:  # the rpath covers it; this also covers a toolchain that drops link args
        env["LD_LIBRARY_PATH"] = lib_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    return env


def rust(crate):
    cargo = find_cargo()
    if not cargo:
        return skip("cargo not found (install Debian's cargo package to run the Rust binding's tests)")
    env = cargo_env(cargo)
    run([cargo, "--version"], env=env)
    return run([cargo, "test", "--offline", "--manifest-path", os.path.join(crate, "Cargo.toml")], env=env).returncode


def rust_example(crate, model):
    cargo = find_cargo()
    if not cargo:
        return skip("cargo not found (install Debian's cargo package to run the Rust example)")
    env = cargo_env(cargo)
    return run([cargo, "run", "--offline", "--quiet", "--manifest-path", os.path.join(crate, "Cargo.toml"),
                "--example", "generate", "--", model, "In the beginning", "16"], env=env).returncode


def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)
    print("ok: " + what, flush=True)


def dependency_dirs(build_dir):
    """Directories of the build tree library's dependencies that are outside the standard
    paths (e.g. /usr/local/cuda/lib64), as ldd resolves them."""
    built = sorted(glob.glob(os.path.join(build_dir, "lib", "libgpt.so.*")))
    if not built or not shutil.which("ldd"):
        return []
    out = subprocess.run(["ldd", built[0]], stdout=subprocess.PIPE, universal_newlines=True).stdout
    dirs = []
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) != 2 or not parts[1].strip().startswith("/"):
            continue
        d = os.path.dirname(parts[1].split()[0])
        standard = d.startswith(("/lib", "/usr/lib")) and "cuda" not in d
        if not standard and not os.path.realpath(d).startswith(os.path.realpath(build_dir)) and d not in dirs:
            dirs.append(d)
    return dirs


def install(build_dir, source_dir, model):
    meson = shutil.which("meson")
    if not meson:
        return skip("meson is not on PATH")
    pkg_config = shutil.which("pkg-config") or shutil.which("pkgconf")
    if not pkg_config:
        return skip("pkg-config not found")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        return skip("no C compiler (cc)")
    with tempfile.TemporaryDirectory(prefix="libgpt-install-") as tmp:
        dest = os.path.join(tmp, "dest")
        r = run([meson, "install", "-C", build_dir, "--no-rebuild", "--destdir", dest], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, universal_newlines=True)
        if r.returncode != 0:
            print(r.stdout)
            return 1
        pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "gpt.pc"), recursive=True)
        check(len(pcs) == 1, "gpt.pc installed (%s)" % pcs)
        pc_dir = os.path.dirname(pcs[0])
        lib_dir = os.path.dirname(pc_dir)
        print(open(pcs[0]).read())
        libs = sorted(os.listdir(lib_dir))
        check("libgpt.so" in libs and os.path.islink(os.path.join(lib_dir, "libgpt.so")), "libgpt.so dev symlink")
        sonames = [f for f in libs if f.startswith("libgpt.so.") and f.count(".") == 2]
        check(len(sonames) == 1 and os.path.islink(os.path.join(lib_dir, sonames[0])), "soname link %s" % sonames)
        real = os.path.realpath(os.path.join(lib_dir, "libgpt.so"))
        check(os.path.basename(real).startswith(sonames[0] + "."), "versioned library %s" % os.path.basename(real))
        headers = glob.glob(os.path.join(dest, "**", "include", "gpt.h*"), recursive=True)
        check(sorted(os.path.basename(h) for h in headers) == ["gpt.h", "gpt.hpp"], "headers %s" % headers)
        tools = glob.glob(os.path.join(dest, "**", "bin", "gpt"), recursive=True)
        check(len(tools) == 1, "the gpt tool installed")

        # pkg-config against the staged tree: the sysroot variable prefixes DESTDIR to -I/-L.
        env = dict(os.environ, PKG_CONFIG_PATH=pc_dir, PKG_CONFIG_SYSROOT_DIR=dest, PKG_CONFIG_ALLOW_SYSTEM_CFLAGS="1",
                   PKG_CONFIG_ALLOW_SYSTEM_LIBS="1")
        flags = run([pkg_config, "--cflags", "--libs", "gpt"], env=env, stdout=subprocess.PIPE,
                    universal_newlines=True, check=True).stdout.split()
        version = run([pkg_config, "--modversion", "gpt"], env=env, stdout=subprocess.PIPE, universal_newlines=True,
                      check=True).stdout.strip()
        check(any(f.startswith("-I" + dest) for f in flags) and "-lgpt" in flags, "pkg-config flags %s" % flags)
        # The installed library only, plus the directories of what it needs outside the system's
        # paths (a CUDA build's libcudart and cuBLAS, found in the build tree through its rpath).
        run_env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join([lib_dir] + dependency_dirs(build_dir)))
        # Nothing of the build tree: no rpath to it, no include path to the source.
        for env_var in ("GPT_LIBRARY", "PYTHONPATH"):
            run_env.pop(env_var, None)

        simple = os.path.join(tmp, "simple")
        run([cc, os.path.join(source_dir, "examples", "simple.c"), "-o", simple] + flags, check=True)
        out = run([simple, model, "In the beginning", "16"], env=run_env, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
        sys.stdout.write(out.stdout.decode("utf-8", "replace") + "\n" + out.stderr.decode("utf-8", "replace"))
        check(out.returncode == 0 and b"tokens/s" in out.stderr, "examples/simple.c built with pkg-config runs")
        ldd = run(["ldd", simple], env=run_env, stdout=subprocess.PIPE, universal_newlines=True).stdout
        check(os.path.join(lib_dir, sonames[0]) in ldd, "simple links the installed %s" % sonames[0])

        # What README.md tells a program outside the system's library paths: an rpath to
        # $(pkg-config --variable=libdir gpt), here the staged libdir. It runs with no
        # LD_LIBRARY_PATH to the library.
        libdir_var = run([pkg_config, "--variable=libdir", "gpt"], env=env, stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout.strip()
        check(os.path.isabs(libdir_var) and os.path.realpath(lib_dir) in (os.path.realpath(libdir_var),
              os.path.realpath(dest + libdir_var)), "pkg-config --variable=libdir gpt names the libdir (%s)" % libdir_var)
        rpath_env = dict(run_env, LD_LIBRARY_PATH=os.pathsep.join(dependency_dirs(build_dir)))
        simple_rpath = os.path.join(tmp, "simple-rpath")
        run([cc, os.path.join(source_dir, "examples", "simple.c"), "-o", simple_rpath, "-Wl,-rpath," + lib_dir] + flags,
            check=True)
        out = run([simple_rpath, model, "In the beginning", "4"], env=rpath_env, stdout=subprocess.PIPE)
        check(out.returncode == 0, "examples/simple.c linked with -Wl,-rpath,LIBDIR runs without LD_LIBRARY_PATH")

        cxx = shutil.which(os.environ.get("CXX", "c++"))
        if cxx:
            simple_cpp = os.path.join(tmp, "simple-cpp")
            run([cxx, "-std=c++17", os.path.join(source_dir, "examples", "simple.cpp"), "-o", simple_cpp] + flags,
                check=True)
            out = run([simple_cpp, model, "In the beginning", "16"], env=run_env, stdout=subprocess.PIPE)
            check(out.returncode == 0, "examples/simple.cpp (gpt.hpp) built with pkg-config runs")

        # The tool links the library statically: it runs as installed, with nothing on
        # LD_LIBRARY_PATH to libgpt, and does not load libgpt.so.
        tool_env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(dependency_dirs(build_dir)))
        for env_var in ("GPT_LIBRARY", "PYTHONPATH"):
            tool_env.pop(env_var, None)
        ldd = run(["ldd", tools[0]], env=tool_env, stdout=subprocess.PIPE, universal_newlines=True).stdout
        check("libgpt" not in ldd, "the installed gpt tool does not need libgpt.so")
        out = run([tools[0], "info", model], env=tool_env, stdout=subprocess.PIPE, universal_newlines=True)
        check(out.returncode == 0, "the installed gpt tool runs without LD_LIBRARY_PATH")

        inits = glob.glob(os.path.join(dest, "**", "libgpt", "__init__.py"), recursive=True)
        if not inits:
            print("note: no Python package installed (meson found no Python installation)")
        else:
            site = os.path.dirname(os.path.dirname(inits[0]))
            py_env = dict(run_env, PYTHONPATH=site, PYTHONDONTWRITEBYTECODE="1")
            code = ("import libgpt, libgpt._build_config as b, sys\n"
                    "print(libgpt.__file__, libgpt.library_path(), b.LIBDIR)\n"
                    "assert libgpt.version() == %r, libgpt.version()\n"
                    "m = libgpt.Model(sys.argv[1], device='cpu')\n"
                    "print(''.join(m.context(max_seq=64).generate('In the beginning', max_tokens=8)).encode())\n"
                    % version)
            out = run([sys.executable, "-c", code, model], env=py_env, cwd=tmp)
            check(out.returncode == 0, "the installed Python package (%s) imports and generates" % site)
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd = argv[1]
    if cmd == "skip":
        return skip(" ".join(argv[2:]))
    if cmd == "rust":
        return rust(argv[2])
    if cmd == "rust-example":
        return rust_example(argv[2], argv[3])
    if cmd == "embed-main":
        out, model, source = argv[2], os.path.abspath(argv[3]), os.path.abspath(argv[4])
        if '"' in model or "\\" in model:
            print("the model path may not contain quotes or backslashes: %s" % model)
            return 1
        with open(out, "w") as f:
            f.write("/* generated by bindings/run_test.py embed-main */\n#define GPT_EMBED_FILE \"%s\"\n"
                    "#include \"%s\"\n" % (model, source))
        return 0
    if cmd == "install":
        return install(argv[2], argv[3], argv[4])
    print("unknown command %r" % cmd)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
