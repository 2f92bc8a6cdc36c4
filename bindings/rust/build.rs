//! Finds libgpt for linking, in order:
//!   1. GPT_LIB_DIR (the directory holding libgpt.so), with GPT_INCLUDE_DIR for gpt.h;
//!   2. pkg-config (`pkg-config --libs-only-L gpt`, run as a process: no crates needed);
//!   3. the source checkout's build directory, ../../build/lib (cargo used inside the repo).
//!
//! It links `-lgpt` dynamically and, unless GPT_NO_RPATH is set, adds the directory as an
//! rpath of this crate's tests and examples so they run without LD_LIBRARY_PATH. When gpt.h is
//! found, its GPT_VERSION_MAJOR must be the ABI major this crate mirrors.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const ABI_MAJOR: u32 = 0;

fn pkg_config(args: &[&str]) -> Option<String> {
    let pc = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(pc).args(args).arg("gpt").output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn header_major(include_dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(include_dir.join("gpt.h")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("#define GPT_VERSION_MAJOR "))
        .and_then(|v| v.trim().parse().ok())
}

fn main() {
    for var in [
        "GPT_LIB_DIR",
        "GPT_INCLUDE_DIR",
        "GPT_NO_RPATH",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG",
    ] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let checkout = manifest.join("../..");

    let mut lib_dirs: Vec<PathBuf> = Vec::new();
    let mut include_dir: Option<PathBuf> = env::var_os("GPT_INCLUDE_DIR").map(PathBuf::from);
    let how;
    if let Some(dir) = env::var_os("GPT_LIB_DIR") {
        lib_dirs.push(PathBuf::from(dir));
        how = "GPT_LIB_DIR";
    } else if let Some(libs) = pkg_config(&["--libs-only-L"]) {
        lib_dirs.extend(
            libs.split_whitespace()
                .filter_map(|f| f.strip_prefix("-L"))
                .map(PathBuf::from),
        );
        if let Some(libdir) = pkg_config(&["--variable=libdir"]) {
            if !libdir.is_empty() && lib_dirs.is_empty() {
                lib_dirs.push(PathBuf::from(libdir));
            }
        }
        if include_dir.is_none() {
            include_dir = pkg_config(&["--variable=includedir"]).map(PathBuf::from);
        }
        how = "pkg-config";
    } else if checkout.join("build/lib/libgpt.so").exists() || checkout.join("build/lib/libgpt.dylib").exists() {
        lib_dirs.push(checkout.join("build/lib"));
        how = "the source checkout's build/lib";
    } else {
        how = "the linker's default search path";
        println!(
            "cargo:warning=libgpt not found through GPT_LIB_DIR, pkg-config or ../../build/lib: \
             relying on the linker's default search path"
        );
    }
    if include_dir.is_none() && checkout.join("include/gpt.h").exists() {
        include_dir = Some(checkout.join("include"));
    }
    if let Some(inc) = &include_dir {
        if let Some(major) = header_major(inc) {
            if major != ABI_MAJOR {
                panic!(
                    "{} declares ABI version {}, this crate mirrors version {}: use a matching libgpt",
                    inc.join("gpt.h").display(),
                    major,
                    ABI_MAJOR
                );
            }
        }
    }

    let rpath = env::var_os("GPT_NO_RPATH").is_none();
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    for dir in &lib_dirs {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        println!("cargo:rustc-link-search=native={}", dir.display());
        if rpath && target_os != "windows" {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
        println!("cargo:lib_dir={}", dir.display()); // DEP_GPT_LIB_DIR for crates that use this one
    }
    println!("cargo:rustc-link-lib=dylib=gpt");
    println!("cargo:rustc-env=LIBGPT_LINKED_VIA={}", how);
}
