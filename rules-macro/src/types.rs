//! What the macro can tell about a type from its tokens alone: element types and their names,
//! `impl Trait` inside a type, stream types, elided lifetimes, invisible groups. Shared by
//! [`crate::check`] (which judges) and [`crate::expand`] (which writes bounds for what cannot be
//! judged here).

use crate::text::type_str;
use proc_macro2::Span;
use quote::ToTokens;
use syn::{GenericArgument, Lifetime, PathArguments, Type};

/// The CUDA stream type, as the last segment of its path.
const CUDA_STREAM: &str = "CudaStream";
/// The runtime's CUDA array type, as the last segment of its path.
const CUDA_ARRAY: &str = "CudaArray";
/// `Arc`, which may wrap a stream.
const ARC: &str = "Arc";
/// `Rc`, which may wrap a communicator.
const RC: &str = "Rc";
/// NCCL's communicator type (`cudarc::nccl::Comm`), as the last segment of its path.
const COMM: &str = "Comm";
/// `Vec`, a host container whose shadow impl asks only `Differentiable` of its element.
const VEC: &str = "Vec";
/// `num_complex::Complex`.
const COMPLEX: &str = "Complex";
/// The type of lengths and offsets.
pub const USIZE: &str = "usize";
/// cudarc's view types, whose one lifetime parameter comes first and may be left unwritten.
const VIEWS: &[&str] = &["CudaView", "CudaViewMut", "UnifiedView", "UnifiedViewMut"];
/// The anonymous lifetime `'_`, without its apostrophe.
const ANONYMOUS: &str = "_";

/// Element types with a derivative, by canonical name (see [`elem_name`]).
pub const DIFFERENTIABLE: &[&str] = &["f32", "f64", "f16", "bf16", "Complex<f32>", "Complex<f64>"];

/// Element types without a derivative.
pub const NOT_DIFFERENTIABLE: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "bool",
    "char", "str", "String",
];

/// The element type of a buffer pointee `X`: `[T]`, `[T; N]`, or the last type argument of a
/// generic container (`Vec<T>`, `CudaSlice<T>`, `CudaView<'a, T>`); `None` for opaque types.
pub fn element_of(x: &Type) -> Option<&Type> {
    match x {
        Type::Slice(s) => Some(&s.elem),
        Type::Array(a) => Some(&a.elem),
        Type::Paren(p) => element_of(&p.elem),
        Type::Group(g) => element_of(&g.elem),
        Type::Path(p) => match &p.path.segments.last()?.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().rev().find_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            }),
            _ => None,
        },
        _ => None,
    }
}

/// The canonical name of an element type, from its tokens: the last path segment (`half::f16` →
/// `f16`), `Complex<f32>` for `Complex<f32>`, `Complex32` and `c32`, `Complex<f64>` likewise.
/// `None` for anything else (a tuple, a qualified path, a container).
pub fn elem_name(t: &Type) -> Option<String> {
    let t = match t {
        Type::Paren(p) => &*p.elem,
        Type::Group(g) => &*g.elem,
        t => t,
    };
    let Type::Path(p) = t else { return None };
    if p.qself.is_some() {
        return None;
    }
    let seg = p.path.segments.last()?;
    match &seg.arguments {
        PathArguments::None => Some(
            match seg.ident.to_string().as_str() {
                "Complex32" | "c32" => "Complex<f32>",
                "Complex64" | "c64" => "Complex<f64>",
                other => other,
            }
            .to_string(),
        ),
        PathArguments::AngleBracketed(a) if seg.ident == COMPLEX && a.args.len() == 1 => {
            let Some(GenericArgument::Type(inner)) = a.args.first() else {
                return None;
            };
            Some(format!("{COMPLEX}<{}>", elem_name(inner)?))
        }
        PathArguments::AngleBracketed(_) | PathArguments::Parenthesized(_) => None,
    }
}

/// The first `impl Trait` inside `ty`.
pub fn find_impl_trait(ty: &Type) -> Option<&syn::TypeImplTrait> {
    match ty {
        Type::ImplTrait(it) => Some(it),
        Type::Reference(r) => find_impl_trait(&r.elem),
        Type::Ptr(p) => find_impl_trait(&p.elem),
        Type::Slice(s) => find_impl_trait(&s.elem),
        Type::Array(a) => find_impl_trait(&a.elem),
        Type::Paren(p) => find_impl_trait(&p.elem),
        Type::Group(g) => find_impl_trait(&g.elem),
        Type::Tuple(t) => t.elems.iter().find_map(find_impl_trait),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                GenericArgument::Type(t) => find_impl_trait(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}

/// `ty` with its first `impl Trait` written as `B`, for the suggestion.
pub fn replace_impl_trait(ty: &Type) -> Type {
    fn walk(ty: &mut Type) -> bool {
        match ty {
            Type::ImplTrait(_) => {
                *ty = syn::parse_quote!(B);
                true
            }
            Type::Reference(r) => walk(&mut r.elem),
            Type::Ptr(p) => walk(&mut p.elem),
            Type::Slice(s) => walk(&mut s.elem),
            Type::Array(a) => walk(&mut a.elem),
            Type::Paren(p) => walk(&mut p.elem),
            Type::Group(g) => walk(&mut g.elem),
            Type::Tuple(t) => t.elems.iter_mut().any(walk),
            Type::Path(p) => p.path.segments.iter_mut().any(|s| match &mut s.arguments {
                PathArguments::AngleBracketed(a) => a.args.iter_mut().any(|g| match g {
                    GenericArgument::Type(t) => walk(t),
                    _ => false,
                }),
                _ => false,
            }),
            _ => false,
        }
    }
    let mut ty = ty.clone();
    walk(&mut ty);
    ty
}

/// Whether `ty` is a CUDA array by its name: `CudaArray<T>` (any path), or a reference to one.
/// An alias of it is not recognised: its boxes are then described as linear memory's.
pub fn is_array_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_array_type(&r.elem),
        Type::Paren(p) => is_array_type(&p.elem),
        Type::Group(g) => is_array_type(&g.elem),
        Type::Path(p) => {
            p.qself.is_none()
                && p.path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == CUDA_ARRAY)
        }
        _ => false,
    }
}

/// Whether `ty` is a CUDA stream by its name: `CudaStream`, `Arc<CudaStream>`, or a reference.
pub fn is_stream_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_stream_type(&r.elem),
        Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            s.ident == CUDA_STREAM
                || (s.ident == ARC
                    && matches!(&s.arguments, PathArguments::AngleBracketed(a)
                        if matches!(a.args.first(), Some(GenericArgument::Type(t)) if is_stream_type(t))))
        }),
        _ => false,
    }
}

/// Whether `ty` is an NCCL communicator by its name: `Comm`, `Arc<Comm>`, `Rc<Comm>`, or a
/// reference to one.
pub fn is_comm_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_comm_type(&r.elem),
        Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            s.ident == COMM
                || ((s.ident == ARC || s.ident == RC)
                    && matches!(&s.arguments, PathArguments::AngleBracketed(a)
                        if matches!(a.args.first(), Some(GenericArgument::Type(t)) if is_comm_type(t))))
        }),
        _ => false,
    }
}

/// Gives every elided lifetime in `ty` (`&T`, `'_`) a name from `fresh`, so the type can be
/// written in `where` bounds and the types of the generated items.
pub fn name_lifetimes(ty: &mut Type, fresh: &mut Vec<Lifetime>) {
    fn walk(ty: &mut Type, next: &mut dyn FnMut(Span) -> Lifetime) {
        match ty {
            Type::Reference(r) => {
                if r.lifetime.as_ref().is_none_or(|l| l.ident == ANONYMOUS) {
                    r.lifetime = Some(next(r.and_token.span));
                }
                walk(&mut r.elem, next);
            }
            Type::Path(p) => {
                if let Some(q) = &mut p.qself {
                    walk(&mut q.ty, next);
                }
                // `CudaViewMut<f32>`: cudarc's views have a lifetime the user may leave unwritten
                // (Rust allows it in paths); it is named like an elided one.
                if let Some(seg) = p.path.segments.last_mut()
                    && VIEWS.contains(&seg.ident.to_string().as_str())
                    && let PathArguments::AngleBracketed(a) = &mut seg.arguments
                    && !a
                        .args
                        .iter()
                        .any(|g| matches!(g, GenericArgument::Lifetime(_)))
                {
                    let l = next(seg.ident.span());
                    a.args.insert(0, GenericArgument::Lifetime(l));
                }
                for seg in &mut p.path.segments {
                    if let PathArguments::AngleBracketed(a) = &mut seg.arguments {
                        for arg in &mut a.args {
                            match arg {
                                GenericArgument::Lifetime(l) if l.ident == ANONYMOUS => {
                                    *l = next(l.apostrophe);
                                }
                                GenericArgument::Type(t) => walk(t, next),
                                _ => {}
                            }
                        }
                    }
                }
            }
            Type::Ptr(p) => walk(&mut p.elem, next),
            Type::Slice(s) => walk(&mut s.elem, next),
            Type::Array(a) => walk(&mut a.elem, next),
            Type::Paren(p) => walk(&mut p.elem, next),
            Type::Group(g) => walk(&mut g.elem, next),
            Type::Tuple(t) => t.elems.iter_mut().for_each(|t| walk(t, next)),
            _ => {}
        }
    }
    let mut next = |span: Span| {
        let l = Lifetime::new(&format!("'_{}", fresh.len() + 1), span);
        fresh.push(l.clone());
        l
    };
    walk(ty, &mut next);
}

/// Whether the macro knows `elem` by name to be differentiable (no bound needed).
pub fn known_elem(elem: &Type) -> bool {
    elem_name(elem).is_some_and(|n| DIFFERENTIABLE.contains(&n.as_str()))
}

/// The host containers whose `ShadowMemory` impl only asks `Differentiable` of the element.
pub fn host_container_elem(x: &Type) -> Option<&Type> {
    match x {
        Type::Slice(_) | Type::Array(_) => element_of(x),
        Type::Path(p)
            if p.qself.is_none()
                && p.path.segments.last().is_some_and(|s| s.ident == VEC)
                && matches!(p.path.segments.last().map(|s| &s.arguments), Some(PathArguments::AngleBracketed(a)) if a.args.len() == 1) =>
        {
            element_of(x)
        }
        _ => None,
    }
}

/// A type as a user would write it (`Vec<f32>`, not `Vec < f32 >`), for messages.
pub fn show(ty: &Type) -> String {
    type_str(&ty.to_token_stream())
}

/// `ty` without the invisible groups a `macro_rules!` `$t:ty` wraps types in, so that the
/// checks see `&mut [f32]` and not an opaque group. A trait object or `impl Trait` keeps
/// parentheses instead, where `+` would otherwise bind differently.
pub fn ungroup(ty: &Type) -> Type {
    fn walk(ty: &mut Type) {
        if let Type::Group(g) = ty {
            let mut inner = (*g.elem).clone();
            walk(&mut inner);
            *ty = match inner {
                Type::TraitObject(_) | Type::ImplTrait(_) => Type::Paren(syn::TypeParen {
                    attrs: Vec::new(),
                    paren_token: syn::token::Paren(g.group_token.span),
                    elem: Box::new(inner),
                }),
                other => other,
            };
            return;
        }
        match ty {
            Type::Reference(r) => walk(&mut r.elem),
            Type::Ptr(p) => walk(&mut p.elem),
            Type::Slice(s) => walk(&mut s.elem),
            Type::Array(a) => walk(&mut a.elem),
            Type::Paren(p) => walk(&mut p.elem),
            Type::Tuple(t) => t.elems.iter_mut().for_each(walk),
            Type::Path(p) => {
                if let Some(q) = &mut p.qself {
                    walk(&mut q.ty);
                }
                for seg in &mut p.path.segments {
                    if let PathArguments::AngleBracketed(a) = &mut seg.arguments {
                        for arg in &mut a.args {
                            if let GenericArgument::Type(t) = arg {
                                walk(t);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut ty = ty.clone();
    walk(&mut ty);
    ty
}

/// Whether `ty` names a lifetime (or has a reference, whose lifetime may be elided): the only
/// types [`same_but_lifetimes`] needs to compare by their text.
pub fn mentions_lifetime(ty: &Type) -> bool {
    match ty {
        Type::Reference(_) => true,
        Type::Path(p) => p.path.segments.iter().any(|seg| match &seg.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().any(|arg| match arg {
                GenericArgument::Lifetime(_) => true,
                GenericArgument::Type(t) => mentions_lifetime(t),
                _ => false,
            }),
            _ => false,
        }),
        Type::Ptr(p) => mentions_lifetime(&p.elem),
        Type::Slice(s) => mentions_lifetime(&s.elem),
        Type::Array(a) => mentions_lifetime(&a.elem),
        Type::Paren(p) => mentions_lifetime(&p.elem),
        Type::Group(g) => mentions_lifetime(&g.elem),
        Type::Tuple(t) => t.elems.iter().any(mentions_lifetime),
        _ => true,
    }
}

/// Whether `ty` names one of `generics`' type or const parameters (or, through a reference,
/// borrows one): a bound on it must be written on the generated impl.
pub fn mentions_generics(ty: &Type, generics: &syn::Generics) -> bool {
    fn walk(tokens: proc_macro2::TokenStream, names: &[String]) -> bool {
        tokens.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) => names.contains(&i.to_string()),
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), names),
            _ => false,
        })
    }
    let names: Vec<String> = generics
        .type_params()
        .map(|t| t.ident.to_string())
        .chain(generics.const_params().map(|c| c.ident.to_string()))
        .collect();
    !names.is_empty() && walk(ty.to_token_stream(), &names)
}

/// Integer types: a count, an offset, an index or a stride, by their look.
const INTEGERS: &[&str] = &[
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "size_t",
    "NonZeroUsize",
    "NonZeroU32",
    "NonZeroU64",
    "NonZeroIsize",
    "NonZero",
    "c_int",
    "c_uint",
    "c_long",
    "c_ulong",
    "c_longlong",
    "c_ulonglong",
];
/// Range types: a run of elements.
const RANGES: &[&str] = &[
    "Range",
    "RangeInclusive",
    "RangeFrom",
    "RangeTo",
    "RangeToInclusive",
    "RangeFull",
    "Bound",
];
/// Types that cannot choose or change what a copy writes, by their look: labels and the
/// context a stream belongs to.
const INERT: &[&str] = &["str", "String", "CudaContext", "PhantomData"];

/// [`ParamClass::Scalar`]'s words for an integer (or a container of them).
pub const INTEGER: &str = "an integer";
/// [`ParamClass::Scalar`]'s words for a value of an element type (or a buffer of them).
pub const ELEMENT_VALUE: &str = "a value of an element type";

/// What an unmarked parameter of a copy or region rule is, by its type's look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamClass {
    /// A CUDA stream by its name (`&CudaStream`, `&Arc<CudaStream>`).
    Stream,
    /// A label or a context (`&str`, `String`, `&Arc<CudaContext>`): it cannot select elements.
    Inert,
    /// An integer, a flag, a range or a value of an element type, or a container of them: it may
    /// choose which elements the primitive writes, or what it writes them with. The words say
    /// which.
    Scalar(&'static str),
    /// Anything else (an alias, a type of the user's, a generic): only the compiler can tell.
    Unknown,
}

/// Classifies a parameter's type for the check that no unmarked parameter can silently change
/// what the primitive writes.
pub fn classify(ty: &Type) -> ParamClass {
    if is_stream_type(ty) {
        return ParamClass::Stream;
    }
    if is_inert_type(ty) {
        return ParamClass::Inert;
    }
    if let Some(what) = scalar_in(ty) {
        return ParamClass::Scalar(what);
    }
    ParamClass::Unknown
}

/// The first integer, flag, range or element value inside `ty` (through references, pointers,
/// tuples, arrays, slices and type arguments), in words.
fn scalar_in(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Reference(r) => scalar_in(&r.elem),
        Type::Ptr(p) => scalar_in(&p.elem),
        Type::Slice(s) => scalar_in(&s.elem),
        Type::Array(a) => scalar_in(&a.elem),
        Type::Paren(p) => scalar_in(&p.elem),
        Type::Group(g) => scalar_in(&g.elem),
        Type::Tuple(t) => t.elems.iter().find_map(scalar_in),
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            let name = seg.ident.to_string();
            if INTEGERS.contains(&name.as_str()) {
                return Some(INTEGER);
            }
            if name == "bool" || name == "AtomicBool" {
                return Some("a flag");
            }
            if RANGES.contains(&name.as_str()) {
                return Some("a range");
            }
            if elem_name(ty).is_some_and(|n| DIFFERENTIABLE.contains(&n.as_str())) {
                return Some(ELEMENT_VALUE);
            }
            match &seg.arguments {
                PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                    GenericArgument::Type(t) => scalar_in(t),
                    _ => None,
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `ty` is a label, a context or a marker by its look: `&str`, `String`, `CudaContext`,
/// `PhantomData<..>`, an `Arc` of one, `()`, or a reference to any of them.
fn is_inert_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_inert_type(&r.elem),
        Type::Paren(p) => is_inert_type(&p.elem),
        Type::Group(g) => is_inert_type(&g.elem),
        Type::Tuple(t) => t.elems.is_empty(),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            INERT.contains(&s.ident.to_string().as_str())
                || (s.ident == ARC
                    && matches!(&s.arguments, PathArguments::AngleBracketed(a)
                        if matches!(a.args.first(), Some(GenericArgument::Type(t)) if is_inert_type(t))))
        }),
        _ => false,
    }
}
