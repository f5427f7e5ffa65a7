//! Stage 3: the pipeline and the code generation. The user's function is emitted unchanged (role
//! attributes stripped) and, next to it, one item: `<name>_rule`, a tuple struct holding the
//! function's other arguments (everything but its buffers), which implements the runtime's rule
//! trait of the kind. The forward rule, the augmented primal and the reverse rule are that
//! trait's provided methods, written once in the runtime; the impl only says how to call the
//! primal on one lane's buffers and what orders the shadow work (the plan). Nothing generic over
//! the activities is type-checked in the user's crate. Every runtime item is named through
//! `<crate>::__private`, every std item through `::core`, so user modules cannot capture them.
//!
//! One generator serves every kind: names, the struct, the primal's call, the ordering (a stream
//! or a communicator) and the docs come from the [`Plan`]; only the trait, its plan and the
//! bounds the macro cannot check depend on the kind ([`bodies`]). What the macro cannot see
//! becomes a `where` bound written at the user's own tokens, so rustc reports it there, worded
//! by the trait's `on_unimplemented`.
//!
//! In an `impl` block (`in_impl`), where no struct can be declared, `name_rule` is an associated
//! function returning the runtime's `InImpl` (the plan and a closure calling `Self::name`), which
//! implements the same trait: the call sites read the same.

mod autodiff;
mod bodies;
mod call;
mod item;
pub(crate) mod names;
mod region;
mod tokens;

use crate::args::parse_args;
use crate::check::check;
use crate::ctxt::Ctxt;
use crate::docs::Docs;
use crate::fallback;
use crate::parse::{Item, Rule, parse_fn};
use crate::plan::{Order, Plan};
use crate::types::{is_comm_type, is_stream_type, mentions_generics, name_lifetimes};
use call::known_outcome;
use names::impl_allowances;
pub use names::{allowances, private_path, rule_name};
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{Ident, Lifetime, ReturnType, Type};
use tokens::{bound_at, respan};

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
    if let Some((message, stubs)) = misplaced(&rule) {
        cx.error_spanned_by(&rule.func.sig.ident, message);
        let errors = cx.take();
        let func = &rule.func;
        let stubs = stubs.then(|| fallback::stubs(&rule));
        return quote!(#func #stubs #errors);
    }
    let plan = check(&cx, &rule);
    let bridges = plan.as_ref().and_then(|p| autodiff::check(&cx, &rule, p));
    let errors = cx.take();
    let func = &rule.func;
    match plan {
        Some(ref plan) if errors.is_empty() => {
            let rules = Generator::new(&rule, plan).generate();
            let bridges = bridges.map(|b| b.generate());
            quote!(#func #rules #bridges)
        }
        _ => {
            let stubs = fallback::stubs(&rule);
            quote!(#func #stubs #errors)
        }
    }
}

/// A rule written where its item cannot be declared (the macro reads the file around it:
/// `crate::place`): an inherent `impl` without `in_impl`, a trait impl, a trait. Then only the
/// function and its stand-in (a function, which such a block can hold) are emitted, with one
/// error saying what to write: the struct would bring the parser's "struct is not supported in
/// `trait`s or `impl`s" before it. Returns the error, and whether the stand-in can be emitted (a
/// trait impl or a trait cannot hold it: the trait does not declare it).
fn misplaced(rule: &Rule) -> Option<(String, bool)> {
    use crate::place::{Block, enclosing_item};
    if rule.has_receiver() {
        return None; // methods have their own error, wherever they are
    }
    let name = &rule.func.sig.ident;
    let block = enclosing_item(name.span())?;
    let message = match block {
        Block::Impl if rule.args.in_impl => return None,
        Block::Impl => format!(
            "`{name}` is in an `impl` block, where the rule item cannot be a struct: add `in_impl` to the attribute, `#[derivative_rule({}, in_impl)]`, and call `Self::{}(...)`",
            rule.args
                .kind
                .as_ref()
                .map_or_else(|| "copy".to_string(), |k| k.ident.to_string()),
            rule_name(rule),
        ),
        Block::TraitImpl | Block::Trait => format!(
            "`{name}` is in {}, which can hold neither the rule item nor (with `in_impl`) a function the trait does not declare: write the primitive as a free function with the attribute (or in an inherent `impl` with `in_impl`), and call it from here",
            if block == Block::Trait {
                "a trait"
            } else {
                "a trait impl"
            },
        ),
        Block::Other => return None,
    };
    Some((message, block == Block::Impl))
}

/// What the kind contributes ([`bodies`]): the trait, the plan of a call, the primal's inputs.
pub struct Parts {
    /// The rule trait, e.g. `CopyRule`.
    pub trait_name: TokenStream,
    /// Its name, for the docs.
    pub trait_text: &'static str,
    /// Its arguments after the lifetime: `X, Y`, or `T`.
    pub args: TokenStream,
    /// The plan's type and expression; `None`: the trait's default (the host).
    pub plan: Option<(TokenStream, TokenStream)>,
    /// The expression of the plan when the trait's default is taken (`in_impl` needs it).
    pub default_plan: TokenStream,
    /// The primal's inputs on one lane: `__d: &mut X, __s: &Y`.
    pub inputs: TokenStream,
    /// A pointer rule: the trait's methods (and its primal) are `unsafe`.
    pub raw: bool,
    /// The plan is the stream alone (`CopyRule::__on`), not `__plan`.
    pub on_only: bool,
    /// `where` predicates the macro could not check itself, each at the user's type.
    pub bounds: TokenStream,
}

/// How the generated code reaches the rule's other arguments.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Fields of a tuple struct, `self.0`.
    Tuple,
    /// Fields of a struct with named fields, `self.name`, built by a constructor function of the
    /// same name (for `#[cfg]`'d parameters, or generic parameters no argument names).
    Named,
    /// An `unsafe` primal on references: the fields of a struct of the rule's own (named fields,
    /// `__a.name`), held in the runtime's `UnsafeArgs`, which the rule struct's one field holds
    /// and only `unsafe` code makes or reaches; built by an `unsafe` constructor function of the
    /// rule's name. The rule trait's methods are safe and call the primal, so the user's module,
    /// which sees the rule struct's fields, must not build or change its arguments without
    /// `unsafe` (see `item.rs`).
    Sealed,
    /// The parameters of an associated function (`in_impl`), captured by a closure.
    Params,
}

/// The code generation of one checked rule.
pub struct Generator<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// Its plan.
    pub plan: &'a Plan,
    /// `<crate>::__private`, in full: the generated items name every runtime item through it.
    /// (Not an alias in an anonymous `const` block around the impl: that block is one more body
    /// for rustc to check per rule, which cost more build time than the longer paths.)
    pub p: TokenStream,
    /// Lifetimes given to elided ones, to be declared on the generated items.
    fresh: Vec<Lifetime>,
    /// What the rules take activities of, lifetimes named: the output's.
    pub dst_ty: Option<Type>,
    /// The input's.
    pub src_ty: Option<Type>,
    /// The other parameters (indices), in order: the rule struct's fields.
    rest: Vec<usize>,
    /// Their types, lifetimes named.
    rest_tys: Vec<Type>,
    /// How they are reached.
    access: Access,
    /// The user's type and const parameters no field, buffer or value type names.
    unnamed: Vec<Ident>,
    /// How many of `fresh` the fields' types name (they are named first).
    rest_fresh: usize,
}

impl<'a> Generator<'a> {
    fn new(rule: &'a Rule, plan: &'a Plan) -> Self {
        let [dst, src] = plan.buffer_params();
        let value = plan.value.as_ref().map(|v| v.param);
        let rest: Vec<usize> = (0..rule.params.len())
            .filter(|&i| Some(i) != dst && Some(i) != src && Some(i) != value)
            .collect();
        let p = private_path(rule);
        let mut g = Generator {
            rule,
            plan,
            p,
            fresh: Vec::new(),
            dst_ty: None,
            src_ty: None,
            rest,
            rest_tys: Vec::new(),
            access: Access::Tuple,
            unnamed: Vec::new(),
            rest_fresh: 0,
        };
        g.rest_tys = g
            .rest
            .clone()
            .into_iter()
            .map(|i| g.named(&rule.params[i].ty))
            .collect();
        g.rest_fresh = g.fresh.len();
        (g.dst_ty, g.src_ty) = g.buffer_types();
        g.unnamed = g.unnamed_generics();
        g.access = if rule.args.in_impl {
            Access::Params
        } else if g.slice_unsafe() {
            Access::Sealed
        } else if !g.unnamed.is_empty() || g.rest.iter().any(|&i| !rule.params[i].cfg.is_empty()) {
            Access::Named
        } else {
            Access::Tuple
        };
        g
    }

    fn generate(self) -> TokenStream {
        let (order, order_bounds) = self.order();
        let outcome = self.outcome_bound();
        let parts = bodies::parts(&self, &order);
        let p = &self.p;
        let rule = self.rule;
        let name = rule_name(rule);
        let s = self.order_lifetime();
        let Parts {
            trait_name,
            args,
            inputs,
            raw,
            bounds,
            ..
        } = &parts;
        let user_where = rule.func.sig.generics.where_clause.as_ref().map(|w| {
            let preds = w.predicates.iter();
            quote!(#(#preds,)*)
        });
        let preds = quote!(#user_where #bounds #order_bounds #outcome);
        let where_clause = (!preds.is_empty()).then(|| quote!(where #preds));
        let call = self.primal_call();
        let docs = Docs::new(self.primal_path_text(), self.plan);
        let doc = docs.rule(&name, &self.arg_names(), parts.trait_text) + &self.param_docs();
        let allow = allowances();
        let vis = &rule.func.vis;
        let names = self.names();
        if self.access == Access::Params {
            let plan = parts.plan.as_ref().map_or(&parts.default_plan, |(_, e)| e);
            let generics = self.impl_generics();
            let params = self.rest.iter().zip(&self.rest_tys).map(|(&i, ty)| {
                let prm = &rule.params[i];
                let (n, cfg) = (&prm.name, &prm.cfg);
                quote!(#(#cfg)* #n: #ty)
            });
            let captures = self
                .lifetimes()
                .into_iter()
                .map(|l| quote!(+ #p::Captures<#l>));
            let unsafety = self.slice_unsafe().then(|| quote!(unsafe));
            return quote! {
                #[doc = #doc]
                #allow
                #[inline]
                #vis #unsafety fn #name #generics (#(#params),*)
                    -> impl #p::#trait_name<#s, #args> #(#captures)* #where_clause
                {
                    unsafe { #p::InImpl::new(#plan, move |#inputs| #call) }.__named(#names)
                }
            };
        }
        let (item, self_ty) = self.rule_struct(&name, &doc);
        let generics = self.impl_generics();
        let unsafety = raw.then(|| quote!(unsafe));
        let plan = parts.plan.as_ref().map(|(ty, expr)| {
            let method = if parts.on_only {
                quote!(__on)
            } else {
                quote!(__plan)
            };
            let bind = self.bind_args(false);
            quote!(#[inline] fn #method(&self) -> #ty { #bind #expr })
        });
        let bind = self.bind_args(true);
        let allow = impl_allowances();
        let mut trait_ref = quote!(#p::#trait_name<#s, #args>);
        if let Some(span) = self.trait_span() {
            trait_ref = respan(trait_ref, span);
        }
        quote! {
            #item
            #allow
            #unsafety impl #generics #trait_ref for #self_ty #where_clause {
                #plan
                const __NAMES: &'static str = #names;
                #[inline]
                #unsafety fn __primal(&mut self, #inputs) -> #p::Result<()> {
                    #bind
                    #p::PrimalOutcome::into_result(#call)
                }
            }
        }
    }

    /// The names the checked mode's errors use (`RuleNames`): the primitive's, the destination's
    /// and the source's or the value's (empty where the kind has none).
    fn names(&self) -> TokenStream {
        let [dst, src] = self.plan.buffer_params();
        let src = src.or(self.plan.value.as_ref().map(|v| v.param));
        let name =
            |i: Option<usize>| i.map_or_else(String::new, |i| self.rule.params[i].name.to_string());
        let (rule, dst, src) = (self.rule.func.sig.ident.to_string(), name(dst), name(src));
        // Packed in one literal (`RuleNames::unpack`): half the build cost of a struct of three.
        let packed = format!("{rule}\0{dst}\0{src}");
        quote!(#packed)
    }

    /// The types the rules take activities of, with their elided lifetimes named: one name per
    /// elided lifetime, as the function itself has, so that a caller's two views of unrelated
    /// lifetimes (`&mut CudaViewMut<'_, T>` ← `&CudaViewMut<'_, T>`) fit.
    fn buffer_types(&mut self) -> (Option<Type>, Option<Type>) {
        let dst = self.plan.dst.as_ref().map(|b| self.named(&b.ty));
        let src = self.plan.src.as_ref().map(|b| self.named(&b.ty));
        (dst, src)
    }

    /// `ty` with its elided lifetimes named, so that it can be written in generated items.
    fn named(&mut self, ty: &Type) -> Type {
        let mut ty = ty.clone();
        name_lifetimes(&mut ty, &mut self.fresh);
        ty
    }

    /// Parameter `i` (one of the rule struct's fields) as the generated code reaches it.
    pub fn arg(&self, i: usize) -> TokenStream {
        let prm = &self.rule.params[i];
        match self.access {
            Access::Params => prm.name.to_token_stream(),
            Access::Named => {
                let n = &prm.name;
                quote!(self.#n)
            }
            Access::Sealed => {
                let n = &prm.name;
                quote!(__a.#n)
            }
            Access::Tuple => {
                let k = self.rest.iter().position(|&j| j == i).unwrap_or(0);
                let k = syn::Index::from(k);
                quote!(self.#k)
            }
        }
    }

    /// The doc comments of the primal's parameters (taken off them: rustc allows none there), as
    /// a list after the rule's own docs.
    fn param_docs(&self) -> String {
        let lines: Vec<String> = self
            .rule
            .params
            .iter()
            .filter(|p| !p.docs.is_empty())
            .map(|p| format!("- `{}`: {}", p.name, p.docs.join(" ")))
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        format!("\n\nThe arguments:\n{}", lines.join("\n"))
    }

    /// The parameters the rule struct holds, by name, for the docs.
    fn arg_names(&self) -> Vec<String> {
        self.rest
            .iter()
            .map(|&i| self.rule.params[i].name.to_string())
            .collect()
    }

    /// `R: PrimalOutcome` at the return type the user wrote, unless the macro knows it holds.
    fn outcome_bound(&self) -> TokenStream {
        let ReturnType::Type(_, ty) = &self.rule.func.sig.output else {
            return TokenStream::new();
        };
        if known_outcome(ty) {
            return TokenStream::new();
        }
        let mut ty = (**ty).clone();
        name_lifetimes(&mut ty, &mut self.fresh.clone());
        let p = &self.p;
        bound_at(&ty, &quote!(#p::PrimalOutcome))
    }

    /// The lifetime of the borrow that orders the shadow work (the trait's `'s`): the stream's or
    /// the communicator's reference; `'static` for the host.
    fn order_lifetime(&self) -> TokenStream {
        let param = match &self.plan.order {
            Order::Stream(None) => return quote!('static),
            Order::Stream(Some(i)) => *i,
            Order::Comm { comm, .. } => *comm,
        };
        let k = self.rest.iter().position(|&j| j == param);
        match k.map(|k| &self.rest_tys[k]) {
            Some(Type::Reference(r)) => r.lifetime.to_token_stream(),
            _ => quote!('static),
        }
    }

    /// What orders the shadow work (`On::stream(s)`, `On::Host`, or the collective on its
    /// communicator), and the bounds at the types of the parameters it takes.
    fn order(&self) -> (TokenStream, TokenStream) {
        let p = &self.p;
        match &self.plan.order {
            Order::Stream(None) => (quote!(#p::On::Host), TokenStream::new()),
            Order::Stream(Some(i)) => {
                let known = is_stream_type(&self.rule.params[*i].ty);
                let (arg, bound) = self.by_ref(*i, &quote!(#p::AsStream), known);
                (quote!(#p::On::stream(#arg)), bound)
            }
            Order::Comm { comm, ranks } => {
                let known = is_comm_type(&self.rule.params[*comm].ty);
                let (comm, mut bounds) = self.by_ref(*comm, &quote!(#p::AsComm), known);
                let mut args = Vec::new();
                for &i in ranks {
                    let (arg, bound) = self.by_ref(i, &quote!(#p::RankArg), false);
                    args.push(arg);
                    bounds.extend(bound);
                }
                let kind = format_ident!("{}", self.plan.kind.name());
                (quote!(#p::Collective::#kind(#comm #(, #args)*)), bounds)
            }
        }
    }

    /// Parameter `i` as a reference for the runtime, and `bound` at the type it refers to
    /// (unless `known`): a reference parameter is passed as it is, any other by `&`.
    fn by_ref(&self, i: usize, bound: &TokenStream, known: bool) -> (TokenStream, TokenStream) {
        let k = self.rest.iter().position(|&j| j == i).unwrap_or(0);
        let arg = self.arg(i);
        let (ty, arg) = match &self.rest_tys[k] {
            Type::Reference(r) => ((*r.elem).clone(), arg),
            other => (other.clone(), quote!(&#arg)),
        };
        // A bound on a type of the rule's own generics goes on the impl (its body needs it);
        // any other type is checked by the call in the body, at the user's type, so that a
        // failure is one error there and the impl still exists for its callers.
        if known {
            (arg, TokenStream::new())
        } else if mentions_generics(&ty, &self.rule.func.sig.generics) {
            (arg, bound_at(&ty, bound))
        } else {
            let at = tokens::first_span(&ty);
            (respan(arg, at), TokenStream::new())
        }
    }
}
