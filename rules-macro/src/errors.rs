//! Error collection: every problem is gathered and reported in one compile (serde_derive's `Ctxt`).

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;

/// Collects errors while the stages run; `check` turns them into one combined `syn::Error`.
#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// A new, empty context.
    pub fn new() -> Self {
        Ctxt::default()
    }

    /// An error spanning the tokens of `obj`.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, obj: T, msg: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// An error at `span`.
    pub fn error_at<M: Display>(&self, span: Span, msg: M) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    /// An error produced by syn.
    pub fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    /// Whether any error was recorded.
    pub fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// All errors as `compile_error!` invocations (empty when there are none).
    pub fn into_compile_errors(self) -> TokenStream {
        self.errors
            .into_inner()
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}

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

fn edit_distance(a: &str, b: &str) -> usize {
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
}
