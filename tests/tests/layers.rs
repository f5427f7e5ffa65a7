//! The runtime's map (docs/map.md), held against the code: every module of `rules-runtime/src`
//! stands on a floor, and imports only from its own floor or the floors below it; and no source
//! file of the runtime or the macro is longer than 500 lines.
//!
//! What is read: every `crate::`, `super::` and `self::` path outside comments and string
//! literals, `use` trees included (`use crate::{a::b, c::{d, e}}`), resolved to the module it
//! names (a name the crate root re-exports, `crate::Error`, to the module that defines it). Unit
//! tests (`#[cfg(test)]` items and the files they declare) are not read: a test may drive a
//! module through the floors above it. `lib.rs` is the crate's face: it declares every module and
//! re-exports from any floor.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The floors, from the ground up, and the modules on each. A module stands on the floor of the
/// longest entry that is a prefix of its path (`memory::raw::rules` before `memory`).
const FLOORS: &[(&str, &[&str])] = &[
    (
        "ground: errors, elements, the driver and its context cache, addresses and boxes",
        &["error", "element", "driver", "address", "region", "par"],
    ),
    ("memory kinds", &["memory"]),
    ("device operations", &["device"]),
    ("routes", &["ops"]),
    (
        "rules",
        &[
            "activity",
            "rules",
            "collective",
            "nccl",
            "array_rules",
            "cudarc_rules",
            // The pointer rules' unsafe core, which stays with the raw views it builds on.
            "memory::raw::lanes",
            "memory::raw::rules",
        ],
    ),
    ("the std::autodiff bridge", &["autodiff"]),
    ("the test kit", &["testing"]),
];

/// The longest file a source file may be, in lines.
const MAX_LINES: usize = 500;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The floor of module `path` (its index in [`FLOORS`]), if it stands on one.
fn floor_of(path: &[String]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (floor, (_, modules)) in FLOORS.iter().enumerate() {
        for m in modules.iter() {
            let segs: Vec<&str> = m.split("::").collect();
            if segs.len() <= path.len()
                && segs.iter().zip(path).all(|(a, b)| a == b)
                && best.is_none_or(|(len, _)| segs.len() > len)
            {
                best = Some((segs.len(), floor));
            }
        }
    }
    best.map(|(_, floor)| floor)
}

/// `text` with comments and the contents of string and character literals blanked out (lines
/// kept, so that line numbers stay).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if b[i] == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // A raw string: r"..", r#".."#.
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            out.extend(std::iter::repeat_n(b' ', j + 1 - i));
            i = j + 1;
            while i < b.len() && !b[i..].starts_with(&close) {
                out.push(blank(b[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len().min(b.len() - i)));
            i += close.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A character literal of one byte ('"', '{'); lifetimes are left alone.
            out.extend_from_slice(b"   ");
            i += 3;
        } else if b[i..].starts_with(b"'\\") {
            // An escaped character literal ('\'', '\n', '\u{..}').
            out.push(b' ');
            i += 2;
            out.push(b' ');
            while i < b.len() && b[i] != b'\'' {
                out.push(blank(b[i]));
                i += 1;
            }
            out.push(b' ');
            i += 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out.truncate(b.len());
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path,
    Punct(char),
}

/// The tokens of (comment-free) code, each with its line.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let b = code.as_bytes();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(code[start..i].to_string()), line));
        } else if b[i..].starts_with(b"::") {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c as char), line));
            i += 1;
        }
    }
    out
}

/// Removes the items under `#[cfg(test)]` (or `#[cfg(all(test, ..))]`) from `toks`, and returns
/// the names of the modules so declared in a file of their own (`#[cfg(test)] mod tests;`).
fn drop_test_items(toks: &mut Vec<(Tok, usize)>) -> Vec<String> {
    let mut test_files = Vec::new();
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    let ident = |t: &Tok, s: &str| matches!(t, Tok::Ident(x) if x == s);
    while i < toks.len() {
        let is_test_cfg = toks[i].0 == Tok::Punct('#')
            && toks.get(i + 1).is_some_and(|t| t.0 == Tok::Punct('['))
            && toks.get(i + 2).is_some_and(|t| ident(&t.0, "cfg"))
            && toks.get(i + 3).is_some_and(|t| t.0 == Tok::Punct('('))
            && (toks.get(i + 4).is_some_and(|t| ident(&t.0, "test"))
                || (toks.get(i + 4).is_some_and(|t| ident(&t.0, "all"))
                    && toks.get(i + 5).is_some_and(|t| t.0 == Tok::Punct('('))
                    && toks.get(i + 6).is_some_and(|t| ident(&t.0, "test"))));
        if !is_test_cfg {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        // Skip this attribute and any that follow, then the item: to its `;`, or through its
        // braced body, whichever comes first.
        while toks.get(i).is_some_and(|t| t.0 == Tok::Punct('#')) {
            let mut depth = 0;
            i += 1;
            while i < toks.len() {
                match toks[i].0 {
                    Tok::Punct('[') => depth += 1,
                    Tok::Punct(']') => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        let start = i;
        let mut depth = 0;
        while i < toks.len() {
            match toks[i].0 {
                Tok::Punct(';') if depth == 0 => {
                    i += 1;
                    break;
                }
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        let item = &toks[start..i];
        let named_mod = item.iter().position(|t| ident(&t.0, "mod")).and_then(|p| {
            match (item.get(p + 1), item.get(p + 2)) {
                (Some((Tok::Ident(name), _)), Some((Tok::Punct(';'), _))) => Some(name.clone()),
                _ => None,
            }
        });
        test_files.extend(named_mod);
    }
    *toks = out;
    test_files
}

/// The paths (from the crate root) that `toks` names through `crate::`, `super::` or `self::`,
/// each with its line, for code in module `module`.
fn paths(toks: &[(Tok, usize)], module: &[String]) -> Vec<(Vec<String>, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let Tok::Ident(first) = &toks[i].0 else {
            i += 1;
            continue;
        };
        let preceded_by_path = i > 0 && toks[i - 1].0 == Tok::Path;
        if preceded_by_path || !matches!(first.as_str(), "crate" | "super" | "self") {
            i += 1;
            continue;
        }
        if toks.get(i + 1).map(|t| &t.0) != Some(&Tok::Path) {
            i += 1;
            continue;
        }
        let line = toks[i].1;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            _ => module[..module.len().saturating_sub(1)].to_vec(),
        };
        i += 2;
        // Further `super::` steps.
        while toks
            .get(i)
            .is_some_and(|t| t.0 == Tok::Ident("super".into()))
            && toks.get(i + 1).is_some_and(|t| t.0 == Tok::Path)
        {
            base.pop();
            i += 2;
        }
        let mut found = Vec::new();
        i = tree(toks, i, base, &mut found);
        out.extend(found.into_iter().map(|p| (p, line)));
    }
    out
}

/// Reads a path or `use` tree from `toks[i]` on, whose segments so far are `prefix`; pushes every
/// whole path into `out` and returns where it stopped.
fn tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix;
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(name)) => {
                if name != "self" {
                    path.push(name.clone());
                }
                i += 1;
                if toks.get(i).map(|t| &t.0) == Some(&Tok::Path) {
                    i += 1;
                    continue;
                }
                out.push(path);
                return i;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Punct('}')) | None => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        Some(Tok::Ident(a)) if a == "as" => i += 2,
                        Some(Tok::Ident(_)) | Some(Tok::Punct('{')) => {
                            i = tree(toks, i, path.clone(), out);
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            _ => {
                // `crate::*` and the like.
                out.push(path);
                return i;
            }
        }
    }
}

/// A source file of the runtime: where it is, its module path, its code's tokens.
struct Source {
    file: PathBuf,
    module: Vec<String>,
    toks: Vec<(Tok, usize)>,
    test_children: Vec<String>,
}

fn module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segs.last().is_some_and(|s| s == "mod" || s == "lib") {
        segs.pop();
    }
    segs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn read_sources(src: &Path, files: &[(PathBuf, String)]) -> Vec<Source> {
    files
        .iter()
        .map(|(file, text)| {
            let module = module_of(file.strip_prefix(src).unwrap_or(file));
            let mut toks = tokens(&code_only(text));
            let test_children = drop_test_items(&mut toks);
            Source {
                file: file.clone(),
                module,
                toks,
                test_children,
            }
        })
        .collect()
}

/// Every import of a lower floor from a higher one in the crate whose root is `src`, given its
/// files (path, text); one line each, naming the file, the line and the import.
fn violations(src: &Path, files: &[(PathBuf, String)]) -> Vec<String> {
    let label = src
        .parent()
        .and_then(|p| p.file_name())
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let sources = read_sources(src, files);
    // Modules under `#[cfg(test)]`, in files of their own.
    let test_modules: Vec<Vec<String>> = sources
        .iter()
        .flat_map(|s| {
            s.test_children.iter().map(|c| {
                let mut m = s.module.clone();
                m.push(c.clone());
                m
            })
        })
        .collect();
    // What the crate root re-exports, by name: `Error` -> `error::Error`.
    let root: BTreeMap<String, Vec<String>> = sources
        .iter()
        .filter(|s| s.module.is_empty())
        .flat_map(|s| root_reexports(&s.toks))
        .collect();
    let mut found = Vec::new();
    for s in &sources {
        if s.module.is_empty() || test_modules.iter().any(|t| s.module.starts_with(t)) {
            continue;
        }
        let rel = s.file.strip_prefix(src).unwrap_or(&s.file).display();
        let rel = format!("{label}/src/{rel}");
        let Some(own) = floor_of(&s.module) else {
            found.push(format!(
                "{rel}: module `{}` stands on no floor",
                s.module.join("::")
            ));
            continue;
        };
        for (path, line) in paths(&s.toks, &s.module) {
            let target = match path.first().and_then(|n| root.get(n)) {
                Some(re) if floor_of(&path).is_none() => re.clone(),
                _ => path.clone(),
            };
            if target.is_empty() || target.starts_with(&s.module) {
                continue;
            }
            match floor_of(&target) {
                None => found.push(format!(
                    "{rel}:{line}: `crate::{}` names no module on a floor",
                    path.join("::")
                )),
                Some(to) if to > own => found.push(format!(
                    "{rel}:{line}: `crate::{}` ({}) is imported by `{}` ({}): a floor imports only \
                     from its own and those below",
                    target.join("::"),
                    FLOORS[to].0,
                    s.module.join("::"),
                    FLOORS[own].0,
                )),
                Some(_) => {}
            }
        }
    }
    found
}

/// The names that the crate root's own `pub use` items re-export, with the paths they re-export
/// (the `pub use` items inside the root's inline modules are not the root's).
fn root_reexports(toks: &[(Tok, usize)]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Ident(u) if u == "use" && depth == 0 => {
                let start = if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Ident("crate".into())) {
                    i + 3
                } else {
                    i + 1
                };
                let mut found = Vec::new();
                i = tree(toks, start, Vec::new(), &mut found);
                for p in found {
                    if let Some(name) = p.last() {
                        out.push((name.clone(), p.clone()));
                    }
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn read_all(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files
        .into_iter()
        .map(|f| {
            let text = fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (f, text)
        })
        .collect()
}

#[test]
fn no_floor_of_the_runtime_imports_a_higher_one() {
    let src = workspace().join("rules-runtime").join("src");
    let found = violations(&src, &read_all(&src));
    assert!(
        found.is_empty(),
        "the runtime's layers (docs/map.md) are crossed upwards:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_source_file_is_over_500_lines() {
    let mut long = Vec::new();
    for krate in ["rules-runtime", "rules-macro"] {
        for (file, text) in read_all(&workspace().join(krate).join("src")) {
            let lines = text.lines().count();
            if lines > MAX_LINES {
                let rel = file
                    .strip_prefix(workspace())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                long.push(format!("{rel}: {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them by behaviour):\n{}",
        long.join("\n")
    );
}

/// The check itself finds what it is for: a crafted crate with one import of each kind.
#[test]
fn the_check_names_the_file_and_the_import_that_climb() {
    let src = Path::new("/crate/src");
    let file = |rel: &str, text: &str| (src.join(rel), text.to_string());
    let files = vec![
        file(
            "lib.rs",
            "pub mod error; mod memory; mod ops;\npub use error::Error;\n",
        ),
        file(
            "error.rs",
            "// use crate::ops::Fine; (a comment)\nconst S: &str = \"crate::ops::x\";\n\
             pub enum Error { A }\n#[cfg(test)]\nmod tests { use crate::ops::Route; }\n\
             fn f() -> crate::memory::Kind { todo!() }\n",
        ),
        file(
            "memory/mod.rs",
            "use crate::{Error, ops::{self, route::Route}};\nmod view;\n#[cfg(test)]\nmod tests;\n",
        ),
        file("memory/view.rs", "use super::super::error::Error;\n"),
        file("memory/tests.rs", "use crate::ops::Route;\n"),
        file(
            "ops/mod.rs",
            "use crate::memory::Kind;\nuse crate::nowhere::X;\n",
        ),
    ];
    let found = violations(src, &files);
    let want = [
        "error.rs:6: `crate::memory::Kind` (memory kinds) is imported by `error` (ground",
        "memory/mod.rs:1: `crate::ops` (routes) is imported by `memory` (memory kinds)",
        "memory/mod.rs:1: `crate::ops::route::Route` (routes) is imported by `memory`",
        "ops/mod.rs:2: `crate::nowhere::X` names no module on a floor",
    ];
    assert_eq!(found.len(), want.len(), "{found:#?}");
    for (f, w) in found.iter().zip(want) {
        assert!(f.contains(w), "{f}\n  does not say: {w}");
    }
}
