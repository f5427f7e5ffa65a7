//! Reading a source file for the block around a line (`crate::place`): an `impl` is found
//! past comments, strings and attributes, and anything else is not one.

use crate::place::{Block, innermost_block};

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
fn a_function_in_an_impl_block_is_found() {
    let src = "struct S;\n#[allow(dead_code)]\npub(crate) unsafe impl<T: Copy> Tr for S where T: Copy {\n  // {\n  fn f() {}\n  HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Impl));
    let src = "impl S {\n    const X: &str = \"}\";\n    const Y: char = '}';\n    const Z: &str = r#\"}\"#;\n    /* } /* } */ */\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Impl));
}

#[test]
fn module_level_functions_and_other_blocks_are_not_impls() {
    let src = "impl S { fn f(&self) -> &'static str { \"{\" } }\nHERE\n";
    assert_eq!(at(src, "HERE"), None);
    let src = "mod m {\n    impl S {}\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Other));
    let src = "trait T {\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Other));
    let src = "fn f<'a>(x: &'a str) {\n    let c = '{';\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Other));
    let src = "fn implement() {\n    HERE\n}\n";
    assert_eq!(at(src, "HERE"), Some(Block::Other));
}

#[test]
fn text_it_cannot_read_to_the_line_answers_nothing() {
    assert_eq!(innermost_block("}\nHERE\n", 2), None);
    assert_eq!(innermost_block("\"unterminated\nHERE\n", 2), None);
}
