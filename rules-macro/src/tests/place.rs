//! Reading a source file for the block around a line (`crate::place`): an `impl` or a `trait`
//! is found past comments, strings, character literals and attributes, and nothing else is
//! taken for one (each case below once misled an earlier reading, or nearly).

use crate::place::{Block, Blocks, innermost_block, innermost_block_at, written_as_fn};

/// The block open at the line holding `marker`.
fn at(source: &str, marker: &str) -> Option<Block> {
    let line = source
        .lines()
        .position(|l| l.contains(marker))
        .expect("marker")
        + 1;
    innermost_block(source, line)
}

#[test]
fn functions_in_impls_and_traits_are_found() {
    let src = "struct S;\n#[allow(dead_code)]\npub(crate) unsafe impl<T: Copy> S<T> where T: for<'a> Fn(&'a u8) {\n  // {\n  fn f() {}\n  HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Impl));
    let src = "impl S {\n    const X: &str = \"}\";\n    const Y: char = '}';\n    const Z: &str = r#\"}\"#;\n    /* } /* } */ */\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Impl));
    let src = "impl<T> Copier for S<T> where T: Copy {\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::TraitImpl));
    let src = "pub unsafe trait T {\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Trait));
}

#[test]
fn module_level_functions_and_other_blocks_are_not_impls() {
    let src = "impl S { fn f(&self) -> &'static str { \"{\" } }\nHERE\n";
    assert_eq!(at(src, "HERE"), None);
    let src = "mod m {\n    impl S {}\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Other));
    let src = "fn f<'a>(x: &'a str) {\n    let c = '{';\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Other));
    let src = "fn implement() {\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Other));
}

#[test]
fn continued_strings_raw_strings_and_wide_characters_are_read_through() {
    // A string continued over lines with `\` at their ends: every line still counts.
    let src = "const HELP: &str = \"a \\\n  b \\\n  c\";\nHERE\nimpl Tool {\n  fn f() {}\n}\n";
    assert_eq!(at(src, "HERE"), None);
    // A raw string ending in a backslash has no escape.
    let src = "impl Paths { pub const SEP: &'static str = r\"\\\"; }\nHERE\nimpl Q {}\n";
    assert_eq!(at(src, "HERE"), None);
    // Characters of more than one byte.
    let src = "impl Brackets { pub const OPEN: [char; 3] = ['«','(','{']; }\nHERE\n";
    assert_eq!(at(src, "HERE"), None);
    let src = "const C: [char; 2] = ['\\u{7D}', '\\'']; \nHERE\n";
    assert_eq!(at(src, "HERE"), None);
}

#[test]
fn text_it_cannot_read_to_the_line_answers_nothing() {
    assert_eq!(innermost_block("}\nHERE\n", 2), None);
    assert_eq!(innermost_block("\"unterminated\nHERE\n", 2), None);
}

#[test]
fn only_a_name_written_as_a_function_is_placed() {
    assert!(written_as_fn(
        "    pub fn copy(#[dst] d: &mut [f32]) {",
        11,
        "copy"
    ));
    assert!(written_as_fn("    unsafe fn copy<T>(", 14, "copy"));
    // A macro's own input language that reads like an impl: `impl f32 { fn copy_a; }`.
    assert!(!written_as_fn(
        "    impl f32 { fn copy_a; fn copy_b; }",
        18,
        "copy_a"
    ));
    // Not after `fn`, or not at that column.
    assert!(!written_as_fn("    let copy = 1;", 8, "copy"));
    assert!(!written_as_fn("    pub fn copy(", 3, "copy"));
    assert!(!written_as_fn("    defn copy(", 9, "copy"));
}

/// The file read once ([`Blocks`], what the macro uses) answers as the reading up to each offset
/// does, around every byte that can change the reading in real sources (this crate's own, with their strings, raw strings,
/// comments, lifetimes, impls and traits), and at every offset of small sources cut short at
/// every length (unclosed strings and comments, braces left open, a brace closing nothing).
#[test]
fn the_file_read_once_answers_as_the_reading_up_to_each_offset() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut sources: Vec<String> = ["place.rs", "tests/place.rs", "text.rs"]
        .iter()
        .map(|f| std::fs::read_to_string(format!("{dir}/{f}")).expect("a source of this crate"))
        .collect();
    let small = [
        "struct S;\n#[allow(dead_code)]\npub(crate) unsafe impl<T: Copy> S<T> where T: for<'a> Fn(&'a u8) {\n  // {\n  fn f() {}\n}\n",
        "impl S { fn f(&self) -> &'static str { \"{\" } }\ntrait T { fn g(); }\n",
        "const HELP: &str = \"a \\\n  b\";\nimpl Tool {\n  fn f() { let r = r#\"}\"#; let c = '}'; }\n}\n",
        "} impl X { /* { /* } */ */ }",
    ];
    for s in small {
        for end in 0..=s.len() {
            sources.push(s[..end].to_string());
        }
    }
    let mut checked = 0;
    for source in &sources {
        let blocks = Blocks::read(source);
        // Every offset of a small source; in a large one, those where the reading can change
        // (at and after each delimiter, quote, slash and line end), and every seventh.
        let bytes = source.as_bytes();
        let offsets = (0..=source.len() + 1).filter(|&k| {
            source.len() < 1000
                || k % 7 == 0
                || [k, k.saturating_sub(1)]
                    .iter()
                    .any(|&j| bytes.get(j).is_some_and(|b| b"{}\"'/*\n;r#".contains(b)))
        });
        for offset in offsets {
            assert_eq!(
                blocks.at(offset),
                innermost_block_at(source, offset),
                "offset {offset} of:\n{source}"
            );
            checked += 1;
        }
    }
    assert!(checked > 20_000, "{checked}");
}
