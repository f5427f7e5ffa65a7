//! The error context: every problem is gathered and reported in one compile, as serde_derive's
//! `Ctxt` does. Its errors must be taken before it is dropped: a context dropped with errors
//! still in it means a check reported a problem that nobody emitted, so the user would get
//! generated code that fails for a reason they are never told. Debug builds (tests, and the
//! proc macro as cargo builds it by default) panic on that bug; every path of the pipeline takes
//! the errors, and the property tests run every path.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;

/// Collects errors while the stages run.
pub struct Ctxt {
    /// `None` once taken.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// A new, empty context.
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    fn push(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("an error recorded after the context's errors were taken")
            .push(error);
    }

    /// An error spanning the tokens of `obj`.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, obj: T, msg: M) {
        self.push(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// An error at `span`.
    pub fn error_at<M: Display>(&self, span: Span, msg: M) {
        self.push(syn::Error::new(span, msg));
    }

    /// Whether any error was recorded.
    pub fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Takes every error, as `compile_error!` invocations (empty when there are none).
    pub fn take(self) -> TokenStream {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        errors.iter().map(syn::Error::to_compile_error).collect()
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if cfg!(debug_assertions) && !std::thread::panicking() && self.errors.get_mut().is_some() {
            panic!("an error context was dropped without its errors being taken");
        }
    }
}
