#!/usr/bin/env bash
# Links two versions of rules-runtime, each with its `autodiff` feature, into one binary and checks
# that they do not mix. The std::autodiff bridges are `extern "C"` functions exported under fixed
# names (Enzyme finds them by name), so two copies of the crate would otherwise define the same
# symbols; the names carry the crate's version (`rules_runtime_v0.1.0::memcpy_htod_f32`, the
# `__enzyme_register_*` / `__enzyme_inactivefn_*` statics, the macro-generated
# `<module>::rules_ad_<name>_<elem>_v0.1.0`). Here: the repository's rules-runtime and rules-macro
# are copied with the next patch version (their workspace manifest too: they inherit its package
# fields and dependencies), a small binary (main.rs) depending on both is built on stable and run
# (each version's copies on host memory reach their own bridges: the values arrive, and only that
# version's bridge counters and error slot move; the integer copies too where a GPU is found), and
# the binary's symbol table must hold each version's bridges and registrations, at distinct
# addresses. The same version twice (one package from two sources) never gets this far: cargo
# refuses it ("package collision in the lockfile").
# TWO_VERSIONS_TARGET_DIR: the cargo target directory (target/two-versions); TWO_VERSIONS_DIR: where
# the copy is written (a directory of its own under $TMPDIR, per checkout).
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
repo=$(cd ../.. && pwd)
export CARGO_TARGET_DIR=${TWO_VERSIONS_TARGET_DIR:-$repo/target/two-versions}
# The copy lives outside the repository: for a path dependency, cargo first looks for a workspace
# root it has already loaded among the directories above it, so a copy below the repository's root
# would inherit the repository's manifest (and version), and cargo would refuse the two. One place per checkout, so that a second run finds it (and its
# build) as the first left it.
work=${TWO_VERSIONS_DIR:-${TMPDIR:-/tmp}/two-versions-$(printf %s "$repo" | cksum | cut -d' ' -f1)}

v0=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml")
IFS=. read -r major minor patch <<<"$v0"
v1=$major.$minor.$((patch + 1))

# Writes stdin to file $1 only when it differs: `cp -p` keeps the sources' times and the
# manifests keep theirs when unchanged, so that cargo finds the copy's build fresh.
put() {
    cat >"$1.new"
    if cmp -s "$1.new" "$1"; then rm "$1.new"; else mv "$1.new" "$1"; fi
}
mkdir -p "$work/check"
for c in rules-runtime rules-macro; do
    rm -rf "${work:?}/$c"
    cp -Rp "$repo/$c" "$work/$c"
done
sed -e 's/^members = .*/members = ["rules-macro", "rules-runtime"]/' \
    -e "s/^version = \"$v0\"\$/version = \"$v1\"/" \
    -e "s/^\(rules-[a-z]* = { path = \"rules-[a-z]*\", version = \)\"$v0\"/\1\"$v1\"/" \
    "$repo/Cargo.toml" | put "$work/Cargo.toml"
if [ "$(grep -c "\"$v1\"" "$work/Cargo.toml")" != 3 ]; then
    echo "two-versions: the workspace manifest's version lines changed shape; update $0" >&2
    exit 1
fi
put "$work/check/Cargo.toml" <<TOML
[package]
name = "two-versions-check"
version = "0.0.0"
edition = "2024"
publish = false

[[bin]]
name = "two-versions-check"
path = "$here/main.rs"

[workspace]

[dependencies]
rr0 = { package = "rules-runtime", path = "$repo/rules-runtime", features = ["autodiff"] }
rr1 = { package = "rules-runtime", path = "../rules-runtime", features = ["autodiff"] }
TOML

cargo build --quiet --manifest-path "$work/check/Cargo.toml"
bin=$CARGO_TARGET_DIR/debug/two-versions-check
"$bin"

# The symbols: each version's, once each, at two addresses.
syms=$(nm "$bin")
address() {
    local a
    a=$(awk -v s="$1" '$3 == s { print $1 }' <<<"$syms")
    if [ "$(wc -w <<<"$a")" != 1 ]; then
        echo "two-versions: \`$1\` is not defined once in the binary (nm: '${a}')" >&2
        exit 1
    fi
    echo "$a"
}
# `@` is the version: the ready-made bridges (a float copy's four, an integer copy's primal) and
# their registrations, and a rule `#[derivative_rule(.., autodiff)]` generated in rules-runtime.
for sym in \
    'rules_runtime_v@::memcpy_htod_f32' 'rules_runtime_v@::memcpy_htod_f32_aug' \
    'rules_runtime_v@::memcpy_htod_f32_rev' 'rules_runtime_v@::memcpy_htod_f32_fwd' \
    'rules_runtime_v@::memcpy_dtoh_f64' 'rules_runtime_v@::memcpy_htod_i32' \
    '__enzyme_register_gradient_rules_runtime_v@::memcpy_htod_f32' \
    '__enzyme_register_derivative_rules_runtime_v@::memcpy_htod_f32' \
    '__enzyme_inactivefn_rules_runtime_v@::memcpy_htod_i32' \
    'rules_runtime::array_rules::rules_ad_upload_array_f32_v@' \
    '__enzyme_register_gradient_rules_runtime::array_rules::rules_ad_upload_array_f32_v@'; do
    s0=${sym//@/$v0} s1=${sym//@/$v1}
    a0=$(address "$s0")
    a1=$(address "$s1")
    if [ "$a0" = "$a1" ]; then
        echo "two-versions: \`$s0\` and \`$s1\` are one address ($a0)" >&2
        exit 1
    fi
    echo "ok   $s0 at $a0, $s1 at $a1"
done
echo "two-versions: rules-runtime $v0 and $v1 in one binary keep their own bridges, and each call ran its own"
