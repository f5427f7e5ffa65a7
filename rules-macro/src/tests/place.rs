//! Reading a source file for the block around a line (`crate::place`): an `impl` or a `trait`
//! is found past comments, strings, character literals and attributes, and nothing else is
//! taken for one (each case below once misled an earlier reading, or nearly).

use crate::place::{Block, innermost_block, written_as_fn};

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
