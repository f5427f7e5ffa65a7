//! Words for messages: typo suggestions, lists of accepted words, and types printed as a user
//! writes them.

use proc_macro2::TokenStream;

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A "did you mean" suffix for a message, or an empty string.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    match closest(word, candidates) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

/// `` `a`, `b` or `c` ``, for messages listing the accepted words.
pub fn one_of(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Tokens as a user would write them (`Vec<f32>`, `*mut f32`, `&'a [T; 4]`), not as
/// `TokenStream`'s `Display` spaces them (`Vec < f32 >`), for messages.
pub fn type_str(tokens: &TokenStream) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for tt in tokens.clone() {
        let text = match &tt {
            proc_macro2::TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                    proc_macro2::Delimiter::Bracket => ("[", "]"),
                    proc_macro2::Delimiter::Brace => ("{ ", " }"),
                    proc_macro2::Delimiter::None => ("", ""),
                };
                format!("{open}{}{close}", type_str(&g.stream()))
            }
            other => other.to_string(),
        };
        let first = text.chars().next();
        let glue = match (prev, first) {
            (None, _) | (_, None) => false,
            // After a `::`, nothing; otherwise a space after `:` (`Fn(x: u8)`).
            (Some(':'), Some(c)) if c != ':' => out.ends_with("::"),
            // The second `:` of `::`; no space after `&`, `*`, `'`, `<`, `!`, `#`, `$`; none
            // before `>`, `,`, `;`, `<`, `?`, `:`, or closing brackets.
            (Some(':' | '&' | '*' | '\'' | '<' | '!' | '#' | '$'), _)
            | (_, Some('>' | ',' | ';' | '<' | '?' | ':' | ')' | ']')) => true,
            // `Fn(..)`, `f32(..)`: no space between a name and its parentheses.
            (Some(c), Some('(')) => c.is_alphanumeric() || c == '_',
            _ => false,
        };
        if !out.is_empty() && !glue {
            out.push(' ');
        }
        out.push_str(&text);
        prev = text.chars().last();
    }
    out
}

pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(closest("cpy", &["copy"]), Some("copy"));
        assert_eq!(closest("memset", &["copy"]), None);
        assert_eq!(closest("dest", &["dst", "src", "len"]), Some("dst"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn words() {
        assert_eq!(one_of(&["a"]), "`a`");
        assert_eq!(one_of(&["a", "b", "c"]), "`a`, `b` or `c`");
    }

    #[test]
    fn types_print_as_written() {
        let show = |s: &str| type_str(&s.parse().unwrap());
        assert_eq!(show("Vec<f32>"), "Vec<f32>");
        assert_eq!(show("Option<()>"), "Option<()>");
        assert_eq!(show("&mut [f32]"), "&mut [f32]");
        assert_eq!(show("*const f32"), "*const f32");
        assert_eq!(show("&'a [half::f16; 4]"), "&'a [half::f16; 4]");
        assert_eq!(
            show("::core::result::Result<(), E>"),
            "::core::result::Result<(), E>"
        );
        assert_eq!(show("Result<usize, String>"), "Result<usize, String>");
        assert_eq!(show("impl Fn(usize) -> bool"), "impl Fn(usize) -> bool");
        assert_eq!(
            show("std::sync::Arc<CudaStream>"),
            "std::sync::Arc<CudaStream>"
        );
    }
}
