//! Where the annotated function is written: at module level, or in an `impl` or a `trait`.
//!
//! A macro cannot see the `impl` around an associated function, and there the rule item (a
//! struct) is refused by the compiler's parser with "struct is not supported in `trait`s or
//! `impl`s", which says nothing of `in_impl`, before any error the macro emits. So the macro
//! reads the source file the function is in (the compiler names it through the span), and when
//! the block around the function's line is unmistakably an `impl` or a `trait`, it says what to
//! write and emits nothing such a block cannot hold. Any doubt (tokens from another macro, a name
//! not written as `fn name(`, an unreadable file, a line it cannot place) answers "no", which
//! keeps the compiler's own errors.

use proc_macro2::Span;
use std::path::PathBuf;
use std::sync::Mutex;

/// The last file read and its reading: the rules of a file are expanded one after another, and
/// reading the file anew for each would make a file of `n` rules cost `n²` (the reading runs in
/// the proc macro, which cargo builds without optimisation). Kept only while the file's text is
/// the same: each call reads the file and compares.
static LAST: Mutex<Option<(PathBuf, String, Blocks)>> = Mutex::new(None);

/// The block the function whose name is at `span` is written in, when it is an `impl` or a
/// `trait` (where the rule item cannot be declared); `None` otherwise, or when unsure.
pub fn enclosing_item(span: Span) -> Option<Block> {
    if !proc_macro::is_available() {
        return None; // unit tests: no compiler to ask
    }
    let span = span.unwrap();
    let path = span.local_file()?;
    let source = std::fs::read_to_string(&path).ok()?;
    let line = span.line();
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if !matches!(&*last, Some((p, text, _)) if *p == path && *text == source) {
        let blocks = Blocks::read(&source);
        *last = Some((path, source, blocks));
    }
    let (_, source, blocks) = last.as_ref()?;
    let start = *blocks.line_starts.get(line.checked_sub(1)?)?;
    let text = source[start..].lines().next()?;
    let name = span.source_text()?;
    let column = span.column().checked_sub(1)?;
    if !written_as_fn(text, column, &name) {
        return None;
    }
    // Up to the name itself, so that `impl S { #[derivative_rule(copy)] fn f(..) {..} }` on
    // one line is read too.
    let offset = start + text.char_indices().nth(column)?.0;
    blocks.at(offset).filter(|b| *b != Block::Other)
}

/// Whether `text` (a line) holds `name` at character `column`, written as a function's name:
/// `fn name(` or `fn name<`. Otherwise the span is not a plain definition in this file (a
/// macro's expansion, a macro's own input language), and nothing is concluded.
pub fn written_as_fn(text: &str, column: usize, name: &str) -> bool {
    let Some(at) = text.char_indices().nth(column).map(|(i, _)| i) else {
        return false;
    };
    let (before, after) = text.split_at(at);
    let Some(after) = after.strip_prefix(name) else {
        return false;
    };
    let after = after.trim_start();
    let before = before.trim_end();
    let Some(head) = before.strip_suffix("fn") else {
        return false;
    };
    let keyword = head
        .chars()
        .last()
        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
    !name.is_empty() && keyword && (after.starts_with('(') || after.starts_with('<'))
}

/// What a `{` opened, as far as this reading needs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Block {
    /// `impl Type {`: an inherent impl, where `in_impl` serves.
    Impl,
    /// `impl Trait for Type {`.
    TraitImpl,
    /// `trait Name {`.
    Trait,
    /// Anything else (a module, a function body, an expression).
    Other,
}

/// The innermost block open at the start of line `line` (1-based) of `source`, reading past
/// comments, strings and character literals; `None` at top level or when the text cannot be
/// read to that line.
#[cfg(test)]
pub fn innermost_block(source: &str, line: usize) -> Option<Block> {
    let blocks = Blocks::read(source);
    blocks.at(*blocks.line_starts.get(line.checked_sub(1)?)?)
}

/// The innermost block open at byte `offset`, read from the start of `source` up to it: what
/// [`Blocks::at`] answers from one reading of the whole file (the tests hold them to the same
/// answer at every offset).
#[cfg(test)]
pub fn innermost_block_at(source: &str, offset: usize) -> Option<Block> {
    let bytes = source.as_bytes();
    let mut stack: Vec<Block> = Vec::new();
    let mut header = String::new();
    let mut current_line = 1;
    let mut i = 0;
    while i < bytes.len() {
        if i >= offset {
            return stack.last().copied();
        }
        match bytes[i] {
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
                i = skip_block_comment(bytes, i, &mut current_line);
            }
            b'"' => i = skip_string(bytes, i + 1, None, &mut current_line)?,
            b'r' if raw_string_start(bytes, i).is_some() => {
                let (hashes, start) = raw_string_start(bytes, i)?;
                i = skip_string(bytes, start, Some(hashes), &mut current_line)?;
            }
            b'\'' => i = skip_char_or_lifetime(source, i),
            b'{' => {
                stack.push(block_of(&header));
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
            c => {
                header.push(c as char);
                i += 1;
            }
        }
    }
    None
}

/// A source file read once for the blocks its braces open, so that the block open at any byte
/// is then a binary search.
pub struct Blocks {
    /// Each `{` or `}` read as code (not in a comment, string or character literal), in order:
    /// its byte offset and the innermost block open after it (`None`: top level).
    braces: Vec<(usize, Option<Block>)>,
    /// The last offset the reading reached as code before the text ended or could no longer be
    /// read (an unclosed string, a `}` closing nothing); past it nothing is concluded.
    readable_to: Option<usize>,
    /// The byte offset of each line's start (line 1 first).
    line_starts: Vec<usize>,
}

impl Blocks {
    /// Reads `source` once, past comments, strings and character literals.
    pub fn read(source: &str) -> Blocks {
        let bytes = source.as_bytes();
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        let mut blocks = Blocks {
            braces: Vec::new(),
            readable_to: None,
            line_starts,
        };
        let mut stack: Vec<Block> = Vec::new();
        // The text of the current item's header since the last `;`, `{` or `}`.
        let mut header = String::new();
        let mut current_line = 1;
        let mut i = 0;
        while i < bytes.len() {
            blocks.readable_to = Some(i);
            let next = match bytes[i] {
                b'\n' => {
                    current_line += 1;
                    header.push(' ');
                    Some(i + 1)
                }
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    let mut j = i;
                    while j < bytes.len() && bytes[j] != b'\n' {
                        j += 1;
                    }
                    Some(j)
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    Some(skip_block_comment(bytes, i, &mut current_line))
                }
                b'"' => skip_string(bytes, i + 1, None, &mut current_line),
                b'r' if raw_string_start(bytes, i).is_some() => raw_string_start(bytes, i)
                    .and_then(|(hashes, start)| {
                        skip_string(bytes, start, Some(hashes), &mut current_line)
                    }),
                b'\'' => Some(skip_char_or_lifetime(source, i)),
                b'{' => {
                    stack.push(block_of(&header));
                    header.clear();
                    blocks.braces.push((i, stack.last().copied()));
                    Some(i + 1)
                }
                b'}' => stack.pop().map(|_| {
                    header.clear();
                    blocks.braces.push((i, stack.last().copied()));
                    i + 1
                }),
                b';' => {
                    header.clear();
                    Some(i + 1)
                }
                c => {
                    header.push(c as char);
                    Some(i + 1)
                }
            };
            match next {
                Some(n) => i = n,
                None => break, // unreadable from `i` on
            }
        }
        blocks
    }

    /// The innermost block open at byte `offset`: that after the last brace before it. `None`
    /// at top level, or past where the text could be read.
    pub fn at(&self, offset: usize) -> Option<Block> {
        if offset > self.readable_to? {
            return None;
        }
        let before = self.braces.partition_point(|&(at, _)| at < offset);
        self.braces[..before].last().and_then(|&(_, block)| block)
    }
}

/// The index after a (nested) block comment starting at `i`.
fn skip_block_comment(bytes: &[u8], mut i: usize, line: &mut usize) -> usize {
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
            *line += usize::from(bytes[i] == b'\n');
            i += 1;
        }
    }
    i
}

/// The index after a character literal (`'a'`, `'«'`, `'\n'`, `'\u{7D}'`) that starts at the
/// quote at `i`, or after the quote alone for a lifetime or a label (`'a`).
fn skip_char_or_lifetime(source: &str, i: usize) -> usize {
    let rest = &source[i + 1..];
    match rest.chars().next() {
        Some('\\') => rest
            .char_indices()
            .skip(2)
            .take(10)
            .find(|&(_, c)| c == '\'')
            .map_or(i + 1, |(k, _)| i + 1 + k + 1),
        Some(c) if rest[c.len_utf8()..].starts_with('\'') => i + 1 + c.len_utf8() + 1,
        _ => i + 1,
    }
}

/// The index after a string's closing quote: an ordinary string (escapes read), or a raw one
/// with `Some(hashes)` `#` after its closing quote (no escapes).
fn skip_string(bytes: &[u8], mut i: usize, raw: Option<usize>, line: &mut usize) -> Option<usize> {
    let hashes = raw.unwrap_or(0);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if raw.is_none() => {
                // An escaped newline (a continued line) is still a line.
                *line += usize::from(bytes.get(i + 1) == Some(&b'\n'));
                i += 2;
            }
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

/// What an item header (the text before its `{`) opens: an `impl` (a trait's when a `for` word
/// comes before any `where`; `for<'a>` of a bound is not one), a `trait`, or anything else.
fn block_of(header: &str) -> Block {
    match first_word(header) {
        Some("impl") => {
            let words = header
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '<'))
                .filter(|w| !w.is_empty());
            if words.take_while(|w| *w != "where").any(|w| w == "for") {
                Block::TraitImpl
            } else {
                Block::Impl
            }
        }
        Some("trait") => Block::Trait,
        _ => Block::Other,
    }
}

/// An item header's first word after attributes, visibility, `unsafe`, `default` and `auto`.
fn first_word(header: &str) -> Option<&str> {
    let mut rest = header.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("#[").or_else(|| rest.strip_prefix("#![")) {
            let mut depth = 1usize;
            let end = after.char_indices().find_map(|(k, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(k + 1)
            })?;
            rest = after[end..].trim_start();
            continue;
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let word = &rest[..len];
        match word {
            "pub" => {
                rest = rest[3..].trim_start();
                if rest.starts_with('(') {
                    rest = rest[rest.find(')')? + 1..].trim_start();
                }
            }
            "unsafe" | "default" | "auto" => rest = rest[len..].trim_start(),
            "" => return None,
            w => return Some(w),
        }
    }
}
