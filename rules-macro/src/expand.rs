//! Stage 3: the pipeline and the code generation. The user's function is emitted unchanged (role
//! attributes stripped) and, next to it, the forward rule and the augmented-primal + reverse
//! pair: three thin functions, each one call into the runtime's rule bodies. Every runtime item
//! is named through `<crate>::__private`, every std item through `::core`, so user modules cannot
//! capture them.
//!
//! One generator serves every kind: names, signatures, the primal's call, the ordering (a stream
//! or a communicator) and the docs come from the [`Plan`]; only the bodies and the bounds they
//! need depend on the kind ([`bodies`]). What the macro cannot see becomes a `where` bound
//! written at the user's own tokens, so rustc reports it there, worded by the trait's
//! `on_unimplemented`; the same bounds let the bodies type-check, so a failed bound is one error,
//! not a cascade.

mod bodies;
mod region;
mod tokens;

use crate::args::parse_args;
use crate::check::check;
use crate::ctxt::Ctxt;
use crate::docs::Docs;
use crate::fallback;
use crate::model::{DEFAULT_CRATE, Kind};
use crate::parse::{Item, Rule, parse_fn};
use crate::plan::{Order, Plan};
use crate::types::{name_lifetimes, same_but_lifetimes};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{GenericParam, Ident, Lifetime, ReturnType, Type};
use tokens::{bound_at, first_span, has_named_lifetime, respan, with_lifetimes_of};

/// The whole macro: parse → check → generate, or the fallback with the errors.
pub fn derivative_rule(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let args = parse_args(&cx, attr);
    let rule = match parse_fn(&cx, args, item) {
        Item::Rule(rule) => *rule,
        Item::Other(tokens) => {
            let errors = cx.take();
            return quote!(#tokens #errors);
        }
    };
    let plan = check(&cx, &rule);
    let errors = cx.take();
    let func = &rule.func;
    match plan {
        Some(plan) if errors.is_empty() => {
            let rules = Generator::new(&rule, &plan).generate();
            quote!(#func #rules)
        }
        _ => {
            let stubs = fallback::stubs(&rule);
            quote!(#func #stubs #errors)
        }
    }
}

/// The names of the three generated functions.
pub struct Names {
    /// The forward rule.
    pub forward: Ident,
    /// The augmented primal.
    pub augmented: Ident,
    /// The reverse rule.
    pub reverse: Ident,
}

impl Names {
    /// `<name>_forward` and the like, or the names the attribute gives.
    pub fn new(rule: &Rule) -> Self {
        let name = &rule.func.sig.ident;
        let or = |given: &Option<Ident>, suffix: &str| {
            given
                .clone()
                .unwrap_or_else(|| format_ident!("{}_{}", name, suffix))
        };
        Names {
            forward: or(&rule.args.forward, "forward"),
            augmented: or(&rule.args.augmented_primal, "augmented_primal"),
            reverse: or(&rule.args.reverse, "reverse"),
        }
    }
}

/// `<crate>::__private`.
pub fn private_path(rule: &Rule) -> TokenStream {
    match &rule.args.krate {
        Some(krate) => quote!(#krate::__private),
        None => {
            let krate = Ident::new(DEFAULT_CRATE, Span::call_site());
            quote!(::#krate::__private)
        }
    }
}

/// The tape the augmented primal of a rule of this kind returns, as the fallback stubs name it
/// (a region rule's tape is generic over the element: the stubs, never called, take `()`).
pub fn tape_type(kind: Option<Kind>, restore: bool, p: &TokenStream) -> TokenStream {
    if kind.is_some_and(Kind::is_collective) {
        quote!(#p::CollectiveTape)
    } else if restore || kind.is_some_and(Kind::is_region) {
        quote!(#p::RegionTape<()>)
    } else {
        quote!(#p::CopyTape)
    }
}

/// Lints the generated items must not trigger in the user's crate, whatever it denies.
pub fn allowances() -> TokenStream {
    quote! {
        #[allow(
            unused_variables,
            unused_qualifications,
            unused_unsafe,
            unused_lifetimes,
            single_use_lifetimes,
            non_snake_case,
            clippy::all,
            clippy::pedantic,
            clippy::nursery,
        )]
    }
}

/// The reverse rule's tape parameter, as its documentation names it.
const TAPE: &str = "tape";

/// What the bodies of one kind contribute: their bounds and the three calls.
#[derive(Default)]
pub struct Bodies {
    /// `where` predicates on `__Dst`, `__Src` and the buffer types.
    pub bounds: TokenStream,
    /// Predicates of the forward rule only (a value's forward activity).
    pub forward_bounds: TokenStream,
    /// Predicates of the augmented primal and the reverse only (a value's reverse activity).
    pub reverse_bounds: TokenStream,
    /// The tape type, when it is not the kind's plain one.
    pub tape: Option<TokenStream>,
    /// What the reverse returns besides errors, when not `()` (a fill's value's derivative).
    pub reverse_output: Option<TokenStream>,
    /// The forward rule's body.
    pub forward: TokenStream,
    /// The augmented primal's body.
    pub augmented: TokenStream,
    /// The reverse rule's body.
    pub reverse: TokenStream,
}

/// The code generation of one checked rule.
pub struct Generator<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// Its plan.
    pub plan: &'a Plan,
    /// `<crate>::__private`.
    pub p: TokenStream,
    /// The reverse rule's tape parameter (renamed if the primal has a `tape`).
    pub tape: Ident,
    /// Lifetimes given to elided ones, to be declared on the generated functions.
    fresh: Vec<Lifetime>,
    /// What the rules take activities of, lifetimes named: the output's.
    pub dst_ty: Option<Type>,
    /// The input's.
    pub src_ty: Option<Type>,
}

impl<'a> Generator<'a> {
    fn new(rule: &'a Rule, plan: &'a Plan) -> Self {
        let tape = if rule.params.iter().any(|p| p.name == TAPE) {
            format_ident!("__{}", TAPE)
        } else {
            format_ident!("{}", TAPE)
        };
        let mut g = Generator {
            rule,
            plan,
            p: private_path(rule),
            tape,
            fresh: Vec::new(),
            dst_ty: None,
            src_ty: None,
        };
        (g.dst_ty, g.src_ty) = g.buffer_types();
        g
    }

    fn generate(mut self) -> TokenStream {
        let (order, order_bounds) = self.order();
        let outcome = self.outcome_bound();
        let call = self.primal();
        let bodies = bodies::bodies(&self, &order, &call);
        let rule = self.rule;
        let p = &self.p;
        let params = self.params();
        let vis = &rule.func.vis;
        let unsafety = self.plan.unsafety.then(|| quote!(unsafe));
        let generics = self.generics();
        let (impl_generics, _, _) = generics.split_for_impl();
        let user_where = generics.where_clause.as_ref().map(|w| {
            let preds = w.predicates.iter();
            quote!(#(#preds,)*)
        });
        let bounds = &bodies.bounds;
        let where_clause = quote!(where #user_where #bounds #order_bounds #outcome);
        let (fwd_bounds, rev_bounds) = (&bodies.forward_bounds, &bodies.reverse_bounds);
        let fwd_where = quote!(#where_clause #fwd_bounds);
        let rev_where = quote!(#where_clause #rev_bounds);
        let names = Names::new(rule);
        let docs = Docs::new(self.primal_path_text(), self.plan);
        let (fwd_doc, aug_doc, rev_doc) = (
            docs.forward(),
            docs.augmented(&names.reverse),
            docs.reverse(&names.augmented),
        );
        let Names {
            forward,
            augmented,
            reverse,
        } = &names;
        let allow = allowances();
        let result = quote!(::core::result::Result);
        let tape = &self.tape;
        let tape_ty = bodies
            .tape
            .clone()
            .unwrap_or_else(|| tape_type(Some(self.plan.kind), false, p));
        let rev_out = bodies.reverse_output.clone().unwrap_or_else(|| quote!(()));
        let Bodies {
            forward: fwd_body,
            augmented: aug_body,
            reverse: rev_body,
            ..
        } = &bodies;
        quote! {
            #[doc = #fwd_doc]
            #allow
            #vis #unsafety fn #forward #impl_generics (#(#params),*) -> #result<(), #p::Error> #fwd_where {
                #fwd_body
            }

            #[doc = #aug_doc]
            #allow
            #vis #unsafety fn #augmented #impl_generics (#(#params),*) -> #result<#tape_ty, #p::Error> #rev_where {
                #aug_body
            }

            #[doc = #rev_doc]
            #allow
            #vis #unsafety fn #reverse #impl_generics (#tape: #tape_ty, #(#params),*) -> #result<#rev_out, #p::Error> #rev_where {
                #rev_body
            }
        }
    }

    /// The types the rules take activities of, with their elided lifetimes named. Two types that
    /// differ only in their lifetimes (`&mut CudaViewMut<'_, T>` ← `&CudaViewMut<'_, T>`) get
    /// the same names: two `where` bounds on one type under two lifetimes would leave the trait
    /// solver two candidates for every use of it, which it cannot choose between.
    fn buffer_types(&mut self) -> (Option<Type>, Option<Type>) {
        let dst = self.plan.dst.as_ref().map(|b| self.named(&b.ty));
        let src = self.plan.src.as_ref().map(|b| match &dst {
            Some(d) if same_but_lifetimes(d, &b.ty) => {
                let mut y = b.ty.clone();
                name_lifetimes(&mut y, &mut self.fresh.clone());
                with_lifetimes_of(&y, d)
            }
            _ => self.named(&b.ty),
        });
        (dst, src)
    }

    /// `ty` with its elided lifetimes named, so that it can be written in `where` bounds.
    fn named(&mut self, ty: &Type) -> Type {
        let mut ty = ty.clone();
        name_lifetimes(&mut ty, &mut self.fresh);
        ty
    }

    /// The user's generics, the lifetimes named for elided ones, then `__Dst` and `__Src`.
    fn generics(&self) -> syn::Generics {
        let mut generics = self.rule.func.sig.generics.clone();
        for l in self.fresh.iter().rev() {
            let param = syn::LifetimeParam::new(l.clone());
            generics.params.insert(0, GenericParam::Lifetime(param));
        }
        if self.plan.dst.is_some() {
            generics.params.push(syn::parse_quote!(__Dst));
        }
        if self.plan.src.is_some() {
            generics.params.push(syn::parse_quote!(__Src));
        }
        if self.plan.value.is_some() {
            generics.params.push(syn::parse_quote!(__Val));
        }
        generics
    }

    /// Parameters of the generated rules: buffers become activities, the rest pass through,
    /// each with its `#[cfg]`.
    fn params(&self) -> Vec<TokenStream> {
        let [dst, src] = self.plan.buffer_params();
        let value = self.plan.value.as_ref().map(|v| v.param);
        let rule = self.rule;
        (0..rule.params.len())
            .map(|i| {
                let prm = &rule.params[i];
                let (n, cfg) = (&prm.name, &prm.cfg);
                if Some(i) == dst {
                    quote!(#n: __Dst)
                } else if Some(i) == src {
                    quote!(#n: __Src)
                } else if Some(i) == value {
                    quote!(#n: __Val)
                } else {
                    let ty = &prm.ty;
                    quote!(#(#cfg)* #n: #ty)
                }
            })
            .collect()
    }

    /// `R: PrimalOutcome` at the return type the user wrote, if any.
    fn outcome_bound(&mut self) -> TokenStream {
        let ReturnType::Type(_, ty) = &self.rule.func.sig.output else {
            return TokenStream::new();
        };
        let ty = self.named(ty);
        let p = &self.p;
        bound_at(&ty, &quote!(#p::PrimalOutcome))
    }

    /// What orders the shadow work (`On::stream(s)`, `On::Host`, or the collective on its
    /// communicator), and the bounds at the types of the parameters it takes.
    fn order(&mut self) -> (TokenStream, TokenStream) {
        let p = self.p.clone();
        match &self.plan.order {
            Order::Stream(None) => (quote!(#p::On::Host), TokenStream::new()),
            Order::Stream(Some(i)) => {
                let (arg, bound) = self.by_ref(*i, &quote!(#p::AsStream));
                (quote!(#p::On::stream(#arg)), bound)
            }
            Order::Comm { comm, ranks } => {
                let (comm, mut bounds) = self.by_ref(*comm, &quote!(#p::AsComm));
                let mut args = Vec::new();
                for &i in ranks {
                    let (arg, bound) = self.by_ref(i, &quote!(#p::RankArg));
                    args.push(arg);
                    bounds.extend(bound);
                }
                let kind = format_ident!("{}", self.plan.kind.name());
                (quote!(#p::Collective::#kind(#comm #(, #args)*)), bounds)
            }
        }
    }

    /// Parameter `i` as a reference for the runtime, and `bound` at the type it refers to: a
    /// reference parameter is passed as it is (bound on its referent), any other by `&`.
    fn by_ref(&mut self, i: usize, bound: &TokenStream) -> (TokenStream, TokenStream) {
        let prm = &self.rule.params[i];
        let n = &prm.name;
        let (ty, arg) = match &prm.ty {
            Type::Reference(r) => ((*r.elem).clone(), quote!(#n)),
            other => (other.clone(), quote!(&#n)),
        };
        let ty = self.named(&ty);
        (arg, bound_at(&ty, bound))
    }

    /// The primal as the runtime calls it, with the buffers as arguments: the function itself
    /// when it takes exactly the buffers, in the runtime's order, and is safe (no closure to
    /// type-check); otherwise a closure that passes the other arguments through.
    fn primal(&self) -> TokenStream {
        let rule = self.rule;
        let path = self.primal_path();
        let [dst, src] = self.plan.buffer_params();
        let value = self.plan.value.as_ref().map(|v| v.param);
        // The runtime calls the primal with the destination, then the source or the value.
        let buffers: Vec<usize> = [dst, src, value].into_iter().flatten().collect();
        let sig = &rule.func.sig;
        let direct = !rule.is_unsafe()
            && (0..rule.params.len()).eq(buffers.iter().copied())
            && !sig
                .generics
                .params
                .iter()
                .any(|g| matches!(g, GenericParam::Lifetime(_)))
            && !has_named_lifetime(sig.inputs.to_token_stream())
            && !has_named_lifetime(sig.output.to_token_stream());
        if direct {
            let args: Vec<TokenStream> = sig
                .generics
                .params
                .iter()
                .filter_map(|g| match g {
                    GenericParam::Type(t) => Some(t.ident.to_token_stream()),
                    GenericParam::Const(c) => Some(c.ident.to_token_stream()),
                    GenericParam::Lifetime(_) => None,
                })
                .collect();
            return if args.is_empty() {
                path
            } else {
                quote!(#path::<#(#args),*>)
            };
        }
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
        let call = if rule.is_unsafe() {
            quote!(unsafe { #call })
        } else {
            call
        };
        let (d, s) = (
            self.closure_param(dst, true),
            self.closure_param(src, false),
        );
        let v = self.plan.value.as_ref().map(|v| {
            let ty = &v.ty;
            quote!(__v: #ty)
        });
        let inputs = [d, s, v].into_iter().flatten();
        quote!(|#(#inputs),*| #call)
    }

    /// `__d: &mut X` (or `*mut T`) and `__s: &Y` (or `*const T`): the closure's parameters,
    /// typed so that the runtime's generic buffer types are fixed by the closure.
    fn closure_param(&self, param: Option<usize>, dst: bool) -> Option<TokenStream> {
        let i = param?;
        let named = if dst { &self.dst_ty } else { &self.src_ty };
        let named = named.as_ref()?;
        let (n, ty) = match (&self.rule.params[i].ty, dst) {
            (Type::Reference(_), true) => (quote!(__d), quote!(&mut #named)),
            (Type::Reference(_), false) => (quote!(__s), quote!(&#named)),
            (Type::Ptr(_), true) => (quote!(__d), quote!(*mut #named)),
            (Type::Ptr(_), false) => (quote!(__s), quote!(*const #named)),
            _ => return None,
        };
        Some(quote!(#n: #ty))
    }

    /// A pass-through argument: references are reborrowed, raw pointers copied, other values
    /// copied through `pass_through` at their type (which must be `Copy`: the primal is called
    /// once per lane; borrowing keeps a non-`Copy` one from a second error about moving out).
    fn pass_through(&self, i: usize) -> TokenStream {
        let prm = &self.rule.params[i];
        let n = &prm.name;
        match &prm.ty {
            Type::Reference(r) if r.mutability.is_some() => quote!(&mut *#n),
            Type::Reference(_) | Type::Ptr(_) => quote!(#n),
            ty => {
                let span = first_span(ty);
                let p = &self.p;
                let copy = respan(quote!(#p::pass_through), span);
                let mut n = n.clone();
                n.set_span(span);
                quote_spanned!(span=> #copy(&#n))
            }
        }
    }

    /// How the generated functions name the primal: next to it in a module, or through `Self`
    /// in an `impl` block (`in_impl`), where associated functions are not in scope by name.
    fn primal_path(&self) -> TokenStream {
        let name = &self.rule.func.sig.ident;
        if self.rule.args.in_impl {
            quote!(Self::#name)
        } else {
            quote!(#name)
        }
    }

    /// The primal's path as the docs link it.
    fn primal_path_text(&self) -> String {
        let name = self.rule.func.sig.ident.to_string();
        if self.rule.args.in_impl {
            format!("Self::{name}")
        } else {
            name
        }
    }
}
