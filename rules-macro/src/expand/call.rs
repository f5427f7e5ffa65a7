//! The primal's call on one lane: its arguments in order, buffers replaced by the lane's, the
//! others passed through from the rule object.

use super::Generator;
use super::tokens::{first_span, respan};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Type;

impl Generator<'_> {
    /// The primal's call on one lane: the buffers (`__d`, `__s`, `__v`) and the other arguments
    /// passed through, in the primal's order, each with its `#[cfg]`.
    pub(super) fn primal_call(&self) -> TokenStream {
        let rule = self.rule;
        let path = self.primal_path();
        let [dst, src] = self.plan.buffer_params();
        let value = self.plan.value.as_ref().map(|v| v.param);
        let generics: Vec<_> = self.type_and_const_params().collect();
        let path = if generics.is_empty() {
            path
        } else {
            quote!(#path::<#(#generics),*>)
        };
        let args = rule.params.iter().enumerate().map(|(i, prm)| {
            let cfg = &prm.cfg;
            let arg = if Some(i) == dst {
                quote!(__d)
            } else if Some(i) == src {
                quote!(__s)
            } else if Some(i) == value {
                quote!(__v)
            } else {
                self.pass_through(i)
            };
            quote!(#(#cfg)* #arg)
        });
        let call = quote!(#path(#(#args),*));
        if rule.is_unsafe() {
            quote!(unsafe { #call })
        } else {
            call
        }
    }

    /// A pass-through argument: references are reborrowed, raw pointers and values of primitive
    /// types copied, other values copied through `pass_through` at their type (which must be
    /// `Copy`: the primal is called once per lane; borrowing keeps a non-`Copy` one from a second
    /// error about moving out).
    pub(super) fn pass_through(&self, i: usize) -> TokenStream {
        let prm = &self.rule.params[i];
        let arg = self.arg(i);
        match &prm.ty {
            Type::Reference(r) if r.mutability.is_some() => quote!(&mut *#arg),
            Type::Reference(_) | Type::Ptr(_) => arg,
            ty if is_primitive(ty) => arg,
            ty => {
                let span = first_span(ty);
                let p = &self.p;
                let copy = respan(quote!(#p::pass_through), span);
                let arg = respan(arg, span);
                quote_spanned!(span=> #copy(&#arg))
            }
        }
    }

    /// How the generated code names the primal: next to it in a module, or through `Self` in
    /// an `impl` block (`in_impl`), where associated functions are not in scope by name.
    pub(super) fn primal_path(&self) -> TokenStream {
        let name = &self.rule.func.sig.ident;
        if self.rule.args.in_impl {
            quote!(Self::#name)
        } else {
            quote!(#name)
        }
    }

    /// The primal's path as the docs link it.
    pub(super) fn primal_path_text(&self) -> String {
        let name = self.rule.func.sig.ident.to_string();
        if self.rule.args.in_impl {
            format!("Self::{name}")
        } else {
            name
        }
    }
}

/// Primitive types, `Copy` by definition: passed through as they are.
const PRIMITIVES: &[&str] = &[
    "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128", "f32",
    "f64", "bool", "char",
];

/// Whether `ty` is a primitive type by its name.
fn is_primitive(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.get_ident().is_some_and(|i| PRIMITIVES.contains(&i.to_string().as_str())))
}

/// Error types whose `Result<(), E>` the macro knows to be a `PrimalOutcome`.
const KNOWN_ERRORS: &[&str] = &["DriverError", "String"];

/// Whether `ty` is `()` or `Result<(), E>` with an error type the macro knows converts.
pub(super) fn known_outcome(ty: &Type) -> bool {
    let last = |ty: &Type| match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().cloned(),
        _ => None,
    };
    if matches!(ty, Type::Tuple(t) if t.elems.is_empty()) {
        return true;
    }
    let Some(seg) = last(ty) else { return false };
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return false;
    };
    let args: Vec<&syn::GenericArgument> = a.args.iter().collect();
    seg.ident == "Result"
        && matches!(args[..], [syn::GenericArgument::Type(Type::Tuple(u)), syn::GenericArgument::Type(e)]
            if u.elems.is_empty() && last(e).is_some_and(|s| s.arguments.is_empty() && KNOWN_ERRORS.iter().any(|k| s.ident == k)))
}
