//! Every page of the repository with a Rust snippet (README.md, each crate's README.md,
//! docs/*.md) is a doctest of this crate's `pages` module (tests/src/lib.rs), so that its
//! snippets compile in CI. A new page, or a snippet added to a page without one, fails here until
//! the page is listed there.

use std::path::{Path, PathBuf};

/// The repository's root: from where this crate was built, or else the working directory (the
/// GPU machine runs the built binaries from a copy of the tree).
fn root() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = if built.join("docs").is_dir() {
        built
    } else {
        std::env::current_dir().unwrap()
    };
    assert!(
        root.join("docs").is_dir() && root.join("tests/src/lib.rs").is_file(),
        "the repository is neither where this crate was built nor the working directory"
    );
    root
}

/// Whether `text` holds a fenced block rustdoc compiles: a fence with no info string or one
/// whose first word is `rust` (`rust,no_run`, `rust,ignore`, ...).
fn has_rust_snippet(text: &str) -> bool {
    let mut inside = false;
    for line in text.lines() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        if !inside {
            let first = info.trim().split([',', ' ']).next().unwrap_or("");
            if first.is_empty() || first == "rust" {
                return true;
            }
        }
        inside = !inside;
    }
    false
}

#[test]
fn every_page_with_a_rust_snippet_is_a_doctest() {
    let root = root();
    let mut pages = vec![PathBuf::from("README.md")];
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if dir.join("Cargo.toml").is_file() && dir.join("README.md").is_file() {
            pages.push(dir.strip_prefix(&root).unwrap().join("README.md"));
        }
    }
    for page in std::fs::read_dir(root.join("docs")).unwrap() {
        let page = page.unwrap().path();
        if page.extension().is_some_and(|e| e == "md") {
            pages.push(page.strip_prefix(&root).unwrap().to_path_buf());
        }
    }
    let lib = std::fs::read_to_string(root.join("tests/src/lib.rs")).unwrap();
    let mut with_snippets = 0;
    let mut missing = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        if !has_rust_snippet(&text) {
            continue;
        }
        with_snippets += 1;
        let include = format!("include_str!(\"../../{}\")", page.display());
        if !lib.contains(&include) {
            missing.push(page.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "pages with Rust snippets that tests/src/lib.rs's `pages` module does not compile: {missing:?}"
    );
    // README.md and the docs hold snippets: a scan that finds none has gone wrong.
    assert!(with_snippets >= 3, "{with_snippets} pages with snippets");
}

#[test]
fn rust_snippets_are_told_from_other_blocks() {
    assert!(has_rust_snippet("a\n```rust\nlet x = 1;\n```\n"));
    assert!(has_rust_snippet("```rust,no_run\nf();\n```"));
    assert!(has_rust_snippet("```\nf();\n```"));
    assert!(!has_rust_snippet(
        "```sh\ncargo test\n```\n```text\nout\n```\n"
    ));
    // A closing fence is not an opening one.
    assert!(!has_rust_snippet("```toml\n[a]\n```\ntext\n"));
}
