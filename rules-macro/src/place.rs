//! Where the annotated function is written: at module level, or in an `impl` block.
//!
//! A macro cannot see the `impl` around an associated function, and there the rule item (a
//! struct) is refused by the compiler's parser with "struct is not supported in `trait`s or
//! `impl`s", which says nothing of `in_impl`, before any error the macro emits. So the macro
//! reads the source file the function is in (the compiler names it through the span), and when
//! the block around the function's line is unmistakably an `impl`, it says what to write and
//! emits nothing the `impl` cannot hold. Any doubt (tokens from another macro, an unreadable
//! file, a line it cannot place) answers "no", which keeps the compiler's own errors.

use proc_macro2::Span;

/// Whether the function whose name is at `span` is written inside an `impl` block.
pub fn in_impl_block(span: Span) -> bool {
    if !proc_macro::is_available() {
        return false; // unit tests: no compiler to ask
    }
    let span = span.unwrap();
    let Some(path) = span.local_file() else {
        return false;
    };
    let Ok(source) = std::fs::read_to_string(path) else {
        return false;
    };
    // The name's own text must be at that line and column: otherwise the span is not a plain
    // place in this file (a macro's expansion), and nothing is concluded.
    let (line, column) = (span.line(), span.column());
    let Some(text) = source.lines().nth(line.wrapping_sub(1)) else {
        return false;
    };
    let name = span.source_text().unwrap_or_default();
    if name.is_empty()
        || !text
            .chars()
            .skip(column.wrapping_sub(1))
            .collect::<String>()
            .starts_with(&name)
    {
        return false;
    }
    innermost_block(&source, line) == Some(Block::Impl)
}

/// What a `{` opened, as far as this reading needs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Block {
    /// `impl ... {`.
    Impl,
    /// Anything else (a module, a function body, a trait, an expression).
    Other,
}

/// The innermost block open at the start of line `line` (1-based) of `source`, reading past
/// comments, strings and character literals; `None` at top level or when the text cannot be
/// read to that line.
pub fn innermost_block(source: &str, line: usize) -> Option<Block> {
    let bytes = source.as_bytes();
    let mut stack: Vec<Block> = Vec::new();
    // The text of the current item's header since the last `;`, `{` or `}`.
    let mut header = String::new();
    let mut current_line = 1;
    let mut i = 0;
    while i < bytes.len() {
        if current_line >= line {
            return stack.last().copied();
        }
        let c = bytes[i];
        match c {
            b'\n' => {
                current_line += 1;
                header.push(' ');
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < bytes.len() {
                    if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        current_line += usize::from(bytes[i] == b'\n');
                        i += 1;
                    }
                }
            }
            b'"' => i = skip_string(bytes, i + 1, 0, &mut current_line)?,
            b'r' if raw_string_start(bytes, i).is_some() => {
                let (hashes, start) = raw_string_start(bytes, i)?;
                i = skip_string(bytes, start, hashes, &mut current_line)?;
            }
            b'\'' => {
                // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a): a literal
                // closes within a few bytes.
                let end = bytes[i + 1..].iter().take(12).position(|&b| b == b'\'');
                match end {
                    Some(k) if k > 0 && (k == 1 || bytes[i + 1] == b'\\') => i += k + 2,
                    _ => i += 1,
                }
            }
            b'{' => {
                stack.push(if is_impl_header(&header) {
                    Block::Impl
                } else {
                    Block::Other
                });
                header.clear();
                i += 1;
            }
            b'}' => {
                stack.pop()?;
                header.clear();
                i += 1;
            }
            b';' => {
                header.clear();
                i += 1;
            }
            _ => {
                header.push(c as char);
                i += 1;
            }
        }
    }
    None
}

/// The index after a string's closing quote (with `hashes` `#` after it for a raw string).
fn skip_string(bytes: &[u8], mut i: usize, hashes: usize, line: &mut usize) -> Option<usize> {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if hashes == 0 => i += 2,
            b'"' if bytes[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&b| b == b'#')
                .count()
                == hashes =>
            {
                return Some(i + 1 + hashes);
            }
            b'\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// `r"`, `r#"`, `br"`: the number of `#` and the index after the opening quote.
fn raw_string_start(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    if i > 0
        && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
        && bytes[i - 1] != b'b'
    {
        return None;
    }
    let mut j = i + 1;
    while bytes.get(j) == Some(&b'#') {
        j += 1;
    }
    (bytes.get(j) == Some(&b'"')).then_some((j - i - 1, j + 1))
}

/// Whether an item header (the text before its `{`) opens an `impl` block: its first word, after
/// attributes, visibility, `unsafe` and `default`, is `impl`.
fn is_impl_header(header: &str) -> bool {
    let mut rest = header.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("#[").or_else(|| rest.strip_prefix("#![")) {
            let mut depth = 1usize;
            let mut end = None;
            for (k, c) in after.char_indices() {
                match c {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(k + 1);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { return false };
            rest = after[end..].trim_start();
            continue;
        }
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        match word.as_str() {
            "pub" => {
                rest = rest[3..].trim_start();
                if rest.starts_with('(') {
                    let Some(close) = rest.find(')') else {
                        return false;
                    };
                    rest = rest[close + 1..].trim_start();
                }
            }
            "unsafe" | "default" => rest = rest[word.len()..].trim_start(),
            "impl" => return true,
            _ => return false,
        }
    }
}
