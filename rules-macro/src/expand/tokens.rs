//! Token helpers of the generator: spans moved onto the user's tokens (so that rustc reports a
//! bound at the type the user wrote).

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::Type;

/// Every token of `tokens`, at `span`.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut out = Group::new(g.delimiter(), respan(g.stream(), span));
                out.set_span(span);
                TokenTree::Group(out)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// The span of the first token of `tokens`.
pub fn first_span<T: ToTokens>(tokens: &T) -> Span {
    tokens
        .to_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

/// `ty: bound,` written at `ty`: rustc reports a failure of the bound at the type the user wrote.
pub fn bound_at(ty: &Type, bound: &TokenStream) -> TokenStream {
    let last = ty
        .to_token_stream()
        .into_iter()
        .last()
        .map_or_else(Span::call_site, |t| t.span());
    let bound = respan(quote!(: #bound,), last);
    quote!(#ty #bound)
}
