//! With the `autodiff` feature and std::autodiff turned on for the build (`-Zautodiff=Enable` in
//! the rustflags every crate gets: `.cargo/config.toml` or `RUSTFLAGS`), checks that the build
//! also registers the bridges with Enzyme. Without `-Cpasses=preserve-nvvm` (and the plugin that
//! defines it), Enzyme never sees the `__enzyme_register_*` statics: it differentiates the
//! bridges' bodies instead and rustc aborts in Enzyme's type analysis, far from the cause. Here
//! the build stops first, with the fix. Without `-Zautodiff=Enable` there is nothing to check:
//! the feature's bridges also build on stable (checked there, never differentiated).

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_AUTODIFF").is_none() {
        return;
    }
    // The flags rustc gets for this crate, one per 0x1f-separated field (cargo's encoding).
    let encoded = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flags = codegen_flags(encoded.split('\x1f').filter(|f| !f.is_empty()));
    let has = |prefix: &str, word: &str| {
        flags
            .iter()
            .filter_map(|f| f.strip_prefix(prefix))
            .any(|v| v.split([',', ' ']).any(|w| w.contains(word)))
    };
    if !has("-Zautodiff=", "Enable") {
        return;
    }
    let mut missing = Vec::new();
    if !has("-Zllvm-plugins=", "Enzyme") {
        missing.push("-Zllvm-plugins=libEnzyme-23.so");
    }
    if !has("-Cpasses=", "preserve-nvvm") {
        missing.push("-Cpasses=preserve-nvvm");
    }
    if missing.is_empty() {
        return;
    }
    println!(
        "cargo::error=rules-runtime's `autodiff` feature with -Zautodiff=Enable needs {} in the \
         same rustflags: without them Enzyme never sees the rules' registrations and rustc \
         aborts in Enzyme's type analysis. The recipe (docs/autodiff.md): [build] rustflags = \
         [\"-Zautodiff=Enable\", \"-Zllvm-plugins=libEnzyme-23.so\", \"-Cpasses=preserve-nvvm\"] \
         in .cargo/config.toml, and lto = \"fat\" in the release profile",
        missing.join(" and ")
    );
}

/// The flags, with `-Z name=v` / `-C name=v` written as one word (`-Zname=v`).
fn codegen_flags<'a>(fields: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<&str> = None;
    for f in fields {
        match pending.take() {
            Some(p) => out.push(format!("{p}{f}")),
            None if f == "-Z" || f == "-C" => pending = Some(f),
            None => out.push(f.to_string()),
        }
    }
    out
}
