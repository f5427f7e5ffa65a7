//! Token helpers of the generator: spans moved onto the user's tokens (so that rustc reports a
//! bound at the type the user wrote), and lifetimes read and renamed in token streams.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{Ident, Type};

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

/// `y` with the lifetimes of `x`, in order, each at `y`'s own token (so that errors about `y`
/// still point at it). Both have every lifetime written out, in the same places.
pub fn with_lifetimes_of(y: &Type, x: &Type) -> Type {
    fn lifetimes(tokens: TokenStream, out: &mut Vec<String>) {
        let mut after_quote = false;
        for tt in tokens {
            match tt {
                TokenTree::Punct(p) => after_quote = p.as_char() == '\'',
                TokenTree::Ident(i) if after_quote => {
                    out.push(i.to_string());
                    after_quote = false;
                }
                TokenTree::Group(g) => lifetimes(g.stream(), out),
                _ => after_quote = false,
            }
        }
    }
    fn replace(tokens: TokenStream, names: &mut std::vec::IntoIter<String>) -> TokenStream {
        let mut after_quote = false;
        tokens
            .into_iter()
            .map(|tt| match tt {
                TokenTree::Punct(p) => {
                    after_quote = p.as_char() == '\'';
                    TokenTree::Punct(p)
                }
                TokenTree::Ident(i) if after_quote => {
                    after_quote = false;
                    let name = names.next().unwrap_or_else(|| i.to_string());
                    TokenTree::Ident(Ident::new(&name, i.span()))
                }
                TokenTree::Group(g) => {
                    after_quote = false;
                    let mut out = Group::new(g.delimiter(), replace(g.stream(), names));
                    out.set_span(g.span());
                    TokenTree::Group(out)
                }
                other => {
                    after_quote = false;
                    other
                }
            })
            .collect()
    }
    let mut names = Vec::new();
    lifetimes(x.to_token_stream(), &mut names);
    let tokens = replace(y.to_token_stream(), &mut names.into_iter());
    syn::parse2(tokens).unwrap_or_else(|_| x.clone())
}
