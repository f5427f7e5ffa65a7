#!/usr/bin/env bash
# The crates a user adds, as crates.io would get them:
#   - the license texts in each published crate are copies of the root's (a package cannot reach
#     files above its own folder, so each crate keeps its own);
#   - `cargo publish --dry-run --workspace` packages and builds rules-macro and rules-runtime (the
#     workspace's only publishable packages; tests/, ui-tests/ and tools/interop are
#     `publish = false`), rules-runtime against the packaged rules-macro. It asks crates.io's index
#     for the dependencies, so it needs the registry (CI has it);
#   - what each package holds: only its sources (with the kernels' PTX, which rules-runtime
#     include_str!s), its README and the licenses; nothing else (benches, test data, tools), and
#     no file over 1 MiB. cargo warns "ignoring benchmark ..." once per bench of rules-runtime:
#     they are left out on purpose (they need a GPU and cuBLAS), and so are their [[bench]] entries.
#
# Usage: tools/publish-check.sh [extra cargo publish args, e.g. --allow-dirty]
set -euo pipefail
cd "$(dirname "$0")/.."

crates=(rules-macro rules-runtime)
for crate in "${crates[@]}"; do
    for license in LICENSE-MIT LICENSE-APACHE; do
        cmp "$license" "$crate/$license" ||
            {
                echo "publish-check: $crate/$license differs from the root's $license (copy it)" >&2
                exit 1
            }
    done
done

# A dry run unpacks the packages it verifies into cargo's registry cache, under their name and
# version (rules-macro-0.1.0), and a later run reuses that copy: the runtime would then be verified
# against an earlier run's macro. Nothing of these names is published yet, so every such copy is
# one of ours: remove them first.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
for crate in "${crates[@]}"; do
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$crate-$version"
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo publish --dry-run --workspace "$@" 2>&1 | tee "$log"
packaged=$(sed -n 's/^ *Packaging \([^ ]*\) v.*/\1/p' "$log" | sort | tr '\n' ' ')
if [ "$packaged" != "${crates[*]} " ]; then
    echo "publish-check: packaged '$packaged', expected '${crates[*]}'" >&2
    exit 1
fi

must_hold() { # crate file...
    local crate=$1 list=$2
    shift 2
    for f in "$@"; do
        grep -qx "$f" <<<"$list" || {
            echo "publish-check: the $crate package lacks $f" >&2
            exit 1
        }
    done
}
for crate in "${crates[@]}"; do
    list=$(cargo package --list --allow-dirty -p "$crate")
    must_hold "$crate" "$list" Cargo.toml README.md LICENSE-MIT LICENSE-APACHE src/lib.rs
    others=$(grep -vxE 'src/.*|build\.rs|README\.md|LICENSE-MIT|LICENSE-APACHE|Cargo\.toml(\.orig)?|Cargo\.lock|\.cargo_vcs_info\.json' <<<"$list" || true)
    if [ -n "$others" ]; then
        echo "publish-check: the $crate package holds files it should not:" >&2
        echo "$others" >&2
        exit 1
    fi
    while read -r f; do
        if [ -f "$crate/$f" ] && [ "$(stat -c %s "$crate/$f")" -gt $((1024 * 1024)) ]; then
            echo "publish-check: $crate/$f is over 1 MiB" >&2
            exit 1
        fi
    done <<<"$list"
    echo "publish-check: $crate holds $(wc -l <<<"$list") files: its sources, README.md, LICENSE-MIT, LICENSE-APACHE"
done
list=$(cargo package --list --allow-dirty -p rules-runtime)
must_hold rules-runtime "$list" src/device/shadow.ptx build.rs

if grep -q '^repository = "https://example.invalid' Cargo.toml; then
    echo "publish-check: note: the workspace's repository is a placeholder (example.invalid); set it before a real publish"
fi
echo "publish-check: rules-macro and rules-runtime package and build as published"
