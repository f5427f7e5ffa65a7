//! Tests of the stages on `proc_macro2` tokens, without a compiler: what the expansion contains,
//! and property tests that the macro never panics, whatever it is given.

use crate::args::parse_args;
use crate::check::check;
use crate::errors::Ctxt;
use crate::expand::derivative_rule;
use crate::parse::{Item, parse_fn};
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use proptest::prelude::*;

fn expand(attr: &str, item: &str) -> String {
    derivative_rule(attr.parse().unwrap(), item.parse().unwrap()).to_string()
}

/// The number of `compile_error!` invocations in an expansion.
fn errors(out: &str) -> usize {
    out.matches("compile_error").count()
}

/// The documentation the expansion gives the function `name` (its `#[doc]` strings, joined).
fn docs_of(out: &str, name: &str) -> String {
    let file: syn::File = syn::parse_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let f = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no fn {name} in {out}"));
    let mut docs = String::new();
    for attr in &f.attrs {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            docs.push_str(&s.value());
            docs.push('\n');
        }
    }
    docs
}

/// The three generated functions of the rule on `f`.
const GENERATED: [&str; 3] = ["f_forward", "f_augmented_primal", "f_reverse"];

/// What the `# Errors` section of every copy rule promises.
fn assert_errors_contract(docs: &str) {
    for promise in [
        "# Errors\nEvery argument and every lane is checked before the first write",
        "`ContextMismatch`, `NoStream`",
        "`UnsupportedKinds`",
        "`LengthMismatch`",
        "`PartialOverlap`",
        "A shadow that aliases a primal, or a shadow of another lane, is a typed error too \
         (`Aliasing`), wherever the runtime can see both addresses.",
        "So an `Err` leaves every primal and every shadow unchanged, except `Primal`",
        "and `Driver` (when CUDA work fails), which report a failure of the work itself",
    ] {
        assert!(docs.contains(promise), "missing {promise:?} in {docs}");
    }
}

#[test]
fn a_pointer_rule_documents_validity_aliasing_and_lifetime() {
    let out = expand(
        "copy, dst = device, src = host",
        "pub unsafe fn f(#[dst] d: *mut f32, #[src] s: *const f32, #[len] n: usize, \
         #[dst_offset] at: usize, st: &CudaStream) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in GENERATED {
        assert!(out.contains(&format!("unsafe fn {name}")), "{name}: {out}");
        let docs = docs_of(&out, name);
        assert_errors_contract(&docs);
        assert!(docs.contains("`RangeOverflow`"), "{name}: {docs}");
        assert_eq!(
            docs.contains("`TapeMismatch`"),
            name == "f_reverse",
            "{name}: {docs}"
        );
        for sentence in [
            // Validity of the shadows, in the declared kinds.
            "# Safety\nThe contract of [`f`], for the primal pointers and again for each lane's \
             shadow pointers.",
            "Every shadow pointer, like its primal, must be valid and aligned for `offset + n` elements",
            "(`dst = device`, `src = host`)",
            // Aliasing.
            "No shadow may alias a primal, nor a shadow of another lane;",
            "shadows may be the same range but must not partially overlap (nor may the primals).",
            "but that is no licence to pass such pointers.",
            // Lifetime.
            "The call returns before the GPU work it enqueues on the copy's stream has completed.",
            "Every pointer must stay valid until that work has completed, and until then nothing may \
             access the memory except work ordered on that stream",
        ] {
            assert!(
                docs.contains(sentence),
                "{name}: missing {sentence:?} in {docs}"
            );
        }
    }
}

#[test]
fn a_pointer_rule_without_a_stream_is_valid_until_its_work_completes() {
    let out = expand(
        "copy, dst = pinned, src = host",
        "unsafe fn f(#[dst] d: *mut f64, #[src] s: *const f64, #[len] n: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in GENERATED {
        let docs = docs_of(&out, name);
        assert!(
            docs.contains("(`dst = pinned`, `src = host`)"),
            "{name}: {docs}"
        );
        assert!(
            docs.contains("No shadow may alias a primal, nor a shadow of another lane;"),
            "{name}: {docs}"
        );
        assert!(
            docs.contains(
                "Every pointer must stay valid, and nothing else may access the memory, until the \
                 call and any work [`f`] leaves pending have completed."
            ),
            "{name}: {docs}"
        );
        assert!(
            !docs.contains("copy's stream has completed"),
            "{name}: {docs}"
        );
    }
}

#[test]
fn a_safe_slice_rule_has_errors_but_no_safety_section() {
    let out = expand(
        "copy",
        "pub fn f(#[dst] dst: &mut [f32], #[src] src: &[f32]) { dst.copy_from_slice(src) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(!out.contains("unsafe fn"), "{out}");
    for name in GENERATED {
        let docs = docs_of(&out, name);
        assert_errors_contract(&docs);
        assert!(!docs.contains("`RangeOverflow`"), "{name}: {docs}");
        assert!(!docs.contains("# Safety"), "{name}: {docs}");
    }
}

#[test]
fn an_unsafe_slice_rule_has_the_primals_contract_and_no_pointer_clauses() {
    let out = expand(
        "copy",
        "unsafe fn f(#[dst] dst: &mut [f32], #[src] src: &[f32]) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in GENERATED {
        let docs = docs_of(&out, name);
        assert_errors_contract(&docs);
        assert!(
            docs.contains(
                "# Safety\nThe contract of [`f`]: the rule calls it with the primal buffers, and \
                 again with each lane's shadows."
            ),
            "{name}: {docs}"
        );
        assert!(!docs.contains("`offset + n`"), "{name}: {docs}");
    }
}

#[test]
fn a_good_rule_expands_to_three_functions_and_no_error() {
    let out = expand(
        "copy",
        "pub fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) { dst.copy_from_slice(src) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in [
        "fn copy_into (",
        "fn copy_into_forward",
        "fn copy_into_augmented_primal",
        "fn copy_into_reverse",
    ] {
        assert!(out.contains(name), "missing {name} in {out}");
    }
    // Role attributes are stripped from the re-emitted function.
    assert!(
        !out.contains("# [dst]") && !out.contains("# [src]"),
        "{out}"
    );
}

#[test]
fn a_renamed_runtime_is_the_only_runtime_path() {
    let out = expand(
        "copy, crate = rt",
        "fn f(#[dst] d: &mut Vec<T>, #[src] s: &[T], x: usize) -> Result<(), E> { Ok(()) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains("rt :: __private"), "{out}");
    assert!(!out.contains("rules_runtime"), "{out}");
    let out = expand(
        "copy, crate = rt, dst = host, src = unified",
        "unsafe fn f(#[dst] d: *mut T, #[src] s: *const T, #[len] n: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(!out.contains("rules_runtime"), "{out}");
}

#[test]
fn collective_rules_expand_to_runtime_calls() {
    let buffers = "#[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>";
    for (kind, ranks, body) in [
        ("broadcast", ", #[root] r: usize", "collective_forward"),
        ("reduce", ", #[root] r: i32", "collective_forward"),
        ("all_gather", "", "collective_forward"),
        ("reduce_scatter", "", "collective_forward"),
        ("all_reduce", "", "collective_forward"),
        (
            "send_recv",
            ", #[send_to] a: usize, #[recv_from] b: usize",
            "collective_forward",
        ),
    ] {
        let out = expand(kind, &format!("fn f(comm: &Comm{ranks}, {buffers}) {{}}"));
        assert_eq!(errors(&out), 0, "{kind}: {out}");
        assert!(out.contains(body), "{kind}: {out}");
        assert!(
            out.contains(&format!("Collective :: {kind} (comm")),
            "{kind}: {out}"
        );
        assert!(out.contains("CollectiveTape"), "{kind}: {out}");
        for name in ["fn f_forward", "fn f_augmented_primal", "fn f_reverse"] {
            assert!(out.contains(name), "{kind}: missing {name} in {out}");
        }
    }
    let out = expand(
        "send",
        "fn f(#[comm] c: &Arc<Comm>, #[peer] p: u32, #[src] x: &CudaSlice<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains("send_reverse") && !out.contains("__Dst"),
        "{out}"
    );
    let out = expand(
        "recv",
        "fn f(comm: &Comm, #[peer] p: u32, #[dst] y: &mut CudaSlice<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains("recv_reverse") && !out.contains("__Src"),
        "{out}"
    );
}

#[test]
fn collective_misuse_is_reported_in_one_pass_with_stubs() {
    let out = expand(
        "all_gather, src = device",
        "fn f(#[root] r: usize, #[len] n: usize, #[src] x: &mut [f32], #[dst] y: &CudaSlice<Complex<f32>>) {}",
    );
    // no communicator, a root on all_gather, `#[len]`, `src = device`, host source, mutable
    // source, immutable destination, complex elements.
    assert!(errors(&out) >= 7, "{} errors in {out}", errors(&out));
    assert!(out.contains("fn f_reverse"), "stubs: {out}");
    assert!(out.contains("CollectiveTape"), "collective stubs: {out}");
}

#[test]
fn every_problem_is_reported_in_one_pass() {
    let out = expand(
        "copy, forwrd = f, dst = gpu",
        "async fn f(#[dest] d: &[i32], #[src] s: &mut [f32], #[len] n: usize) -> usize { n }",
    );
    // forwrd, gpu, async, return type, immutable dst, mutable src, #[dest], #[len], i32, dst = .
    assert!(errors(&out) >= 8, "{} errors in {out}", errors(&out));
}

#[test]
fn on_error_the_function_and_stubs_are_still_emitted() {
    let out = expand(
        "copy",
        "fn copy_into(#[dst] dst: &[f32], #[src] src: &[f32]) {}",
    );
    assert_eq!(errors(&out), 1, "{out}");
    assert!(out.contains("fn copy_into ("), "{out}");
    for stub in [
        "fn copy_into_forward",
        "fn copy_into_augmented_primal",
        "fn copy_into_reverse",
    ] {
        assert!(out.contains(stub), "missing stub {stub} in {out}");
    }
    // Something that is not a function comes back unchanged, with the error.
    let out = expand("copy", "struct S { x: f32 }");
    assert_eq!(errors(&out), 1, "{out}");
    assert!(out.contains("struct S"), "{out}");
}

#[test]
fn the_stages_run_on_tokens() {
    let cx = Ctxt::new();
    let args = parse_args(&cx, "copy, dst = device, src = host".parse().unwrap());
    assert!(args.kind.is_some() && args.dst_kind.is_some() && args.src_kind.is_some());
    let item = "unsafe fn up(#[dst] d: *mut f32, #[src] s: *const f32, #[len] n: usize, st: &CudaStream) {}";
    let Item::Rule(rule) = parse_fn(&cx, args, item.parse().unwrap()) else {
        panic!("a function parses as a rule");
    };
    let checked = check(&cx, &rule).expect("a valid pointer rule passes the checks");
    assert_eq!((checked.dst, checked.src, checked.stream), (0, 1, Some(3)));
    assert!(checked.unsafety && !cx.has_errors());
}

// ---- Property tests: the macro never panics. ----

/// Words the attribute and the signatures are made of: the macro's keywords, near misses, Rust
/// keywords, and noise.
const WORDS: &[&str] = &[
    "copy",
    "cpy",
    "memset",
    "crate",
    "dst",
    "src",
    "len",
    "stream",
    "forward",
    "reverse",
    "augmented_primal",
    "host",
    "pinned",
    "device",
    "unified",
    "gpu",
    "fn",
    "self",
    "Self",
    "super",
    "mut",
    "const",
    "async",
    "unsafe",
    "extern",
    "impl",
    "dyn",
    "where",
    "for",
    "as",
    "_",
    "rules_runtime",
    "rt",
    "x",
    "T",
    "f32",
    "u8",
    "Vec",
    "Result",
];
const PUNCTS: &[char] = &[
    '=', ',', ':', '#', '<', '>', '&', '*', '\'', '-', '!', '.', ';', '@',
];

/// One arbitrary token tree (possibly a group of arbitrary tokens).
fn token_tree() -> impl Strategy<Value = TokenTree> {
    let leaf = prop_oneof![
        prop::sample::select(WORDS)
            .prop_map(|w| TokenTree::Ident(Ident::new(w, Span::call_site()))),
        (prop::sample::select(PUNCTS), any::<bool>()).prop_map(|(c, joint)| {
            let spacing = if joint {
                Spacing::Joint
            } else {
                Spacing::Alone
            };
            TokenTree::Punct(Punct::new(c, spacing))
        }),
        prop_oneof![
            any::<u32>().prop_map(Literal::u32_unsuffixed),
            "[a-z ]{0,6}".prop_map(|s| Literal::string(&s)),
            Just(Literal::character('c')),
            Just(Literal::f64_unsuffixed(1.5)),
        ]
        .prop_map(TokenTree::Literal),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        (
            prop::sample::select(
                &[
                    Delimiter::Parenthesis,
                    Delimiter::Bracket,
                    Delimiter::Brace,
                    Delimiter::None,
                ][..],
            ),
            prop::collection::vec(inner, 0..6),
        )
            .prop_map(|(d, tts)| TokenTree::Group(Group::new(d, tts.into_iter().collect())))
    })
}

fn token_stream(max: usize) -> impl Strategy<Value = TokenStream> {
    prop::collection::vec(token_tree(), 0..max).prop_map(|tts| tts.into_iter().collect())
}

/// Attribute arguments: mostly plausible (`key = value` pieces), sometimes pure noise.
fn attr_args() -> impl Strategy<Value = TokenStream> {
    let piece = prop_oneof![
        prop::sample::select(
            &[
                "copy",
                "copy(x)",
                "cpy",
                "crate = rt",
                "crate = ::rules_runtime",
                "crate = \"rt\"",
                "crate = 1",
                "crate =",
                "dst = host",
                "src = device",
                "dst = \"host\"",
                "src = gpu",
                "dst = a::b",
                "forward = f",
                "reverse = \"r\"",
                "augmented_primal = fn",
                "forward",
                "stream = s",
                "a::b = c",
                "copy forward = f",
                "all_gather",
                "broadcast",
                "send",
                "allreduce",
                "peer_copy",
                "= =",
                "",
            ][..]
        )
        .prop_map(|s| s.parse::<TokenStream>().unwrap()),
        token_stream(4),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| {
        let mut out = TokenStream::new();
        for (i, p) in pieces.into_iter().enumerate() {
            if i > 0 {
                out.extend([TokenTree::Punct(Punct::new(',', Spacing::Alone))]);
            }
            out.extend(p);
        }
        out
    })
}

const ATTRS: &[&str] = &[
    "",
    "",
    "#[dst]",
    "#[src]",
    "#[len]",
    "#[dst_offset]",
    "#[src_offset]",
    "#[stream]",
    "#[dest]",
    "#[offset]",
    "#[dst(x)]",
    "#[src = 1]",
    "#[cfg(test)]",
    "#[dst] #[src]",
    "#[dst] #[dst]",
    "#[a::b]",
];
const PATTERNS: &[&str] = &[
    "x", "_", "mut x", "(a, b)", "ref x", "x @ _", "tape", "r#type",
];
const TYPES: &[&str] = &[
    "&mut [f32]",
    "&[f32]",
    "&mut [f64; 4]",
    "&Vec<f16>",
    "&mut Vec<u8>",
    "&[bool]",
    "*mut f32",
    "*const f32",
    "*mut u16",
    "*const Complex<f64>",
    "*const Complex<i32>",
    "&mut [T]",
    "&[U]",
    "&'a mut [f32]",
    "&mut CudaViewMut<'_, f32>",
    "&CudaView<f32>",
    "&mut Ring",
    "Vec<f32>",
    "[f32; 3]",
    "(f32, f32)",
    "()",
    "usize",
    "u32",
    "&usize",
    "String",
    "Option<&str>",
    "&mut usize",
    "&CudaStream",
    "&Arc<CudaStream>",
    "Arc<CudaStream>",
    "impl Fn(usize)",
    "&mut impl AsMut<[f32]>",
    "&dyn Any",
    "Box<dyn Fn(&f32) -> f32>",
    "fn(u8) -> u8",
    "!",
    "_",
    "<T as Tr>::X",
    "&mut <T as Tr>::X",
    "Self",
    "&mut Self",
    "m!()",
    "&&mut [f32]",
    "*mut *const f32",
];
const RECEIVERS: &[&str] = &["self", "&self", "&mut self", "mut self", "self: Box<Self>"];
const RETURNS: &[&str] = &[
    "",
    "-> ()",
    "-> usize",
    "-> Result<(), E>",
    "-> Result<usize, E>",
    "-> Result",
    "-> io::Result<()>",
    "-> Option<()>",
    "-> impl Sized",
    "-> !",
    "-> Self",
    "-> &'static str",
    "-> (f32, f32)",
    "-> <T as Tr>::X",
];
const QUALIFIERS: &[&str] = &[
    "",
    "",
    "pub",
    "pub(crate) const",
    "async",
    "unsafe",
    "unsafe extern \"C\"",
    "extern \"C\"",
    "pub async unsafe",
    "default",
];
const GENERICS: &[&str] = &[
    "",
    "<T>",
    "<T: Differentiable>",
    "<'a>",
    "<'a, 'b: 'a>",
    "<T, U>",
    "<const N: usize>",
    "<T: Copy, const N: usize>",
    "<__Dst>",
];
const WHERE: &[&str] = &["", "where T: Differentiable", "where T: Copy,", "where"];
const BODIES: &[&str] = &["{}", "{ x }", ";", "{ unsafe { x } }"];

/// A function signature from the pools: random qualifiers, generics, parameters (with random
/// role attributes, patterns and types), variadic tails, return types and bodies.
fn signature() -> impl Strategy<Value = String> {
    let param = (
        prop::sample::select(ATTRS),
        prop::sample::select(PATTERNS),
        prop::sample::select(TYPES),
    )
        .prop_map(|(a, p, t)| format!("{a} {p}: {t}"));
    (
        prop::sample::select(QUALIFIERS),
        prop::sample::select(GENERICS),
        prop::option::of((prop::sample::select(ATTRS), prop::sample::select(RECEIVERS))),
        prop::collection::vec(param, 0..6),
        prop::sample::select(&["", ", ...", ", mut args: ..."][..]),
        prop::sample::select(RETURNS),
        prop::sample::select(WHERE),
        prop::sample::select(BODIES),
    )
        .prop_map(|(q, g, recv, params, variadic, ret, wh, body)| {
            let mut all: Vec<String> = recv.map(|(a, r)| format!("{a} {r}")).into_iter().collect();
            all.extend(params);
            let variadic = if all.is_empty() {
                variadic.trim_start_matches(", ")
            } else {
                variadic
            };
            format!(
                "{q} fn f{g}({}{variadic}) {ret} {wh} {body}",
                all.join(", ")
            )
        })
}

const SLICE_DSTS: &[&str] = &[
    "&mut [f32]",
    "&mut Vec<f64>",
    "&mut [Complex<f32>; 4]",
    "&mut [T]",
    "&'a mut [T; N]",
    "&mut CudaViewMut<'_, f16>",
    "&mut Ring",
    "&mut <T as Tr>::Buf",
    "&mut [u8]",
];
const SLICE_SRCS: &[&str] = &[
    "&[f32]",
    "&Vec<f64>",
    "&[c32]",
    "&[T]",
    "&'b [U; N]",
    "&CudaView<'_, f16>",
    "&Ring",
    "&[Complex64]",
];
const ELEMS: &[&str] = &["f32", "T", "Complex<f64>", "half::bf16", "Meters", "u8"];
const EXTRA_PARAMS: &[&str] = &[
    "s: &CudaStream",
    "#[stream] s: &MyStream",
    "calls: &mut usize",
    "label: &str",
    "k: u8",
    "(a, b): (usize, usize)",
    "_: Option<&f32>",
    "tape: u32",
    "name: String",
    "#[dst_offset] at: usize",
];
/// Collective kinds with the communicator and ranks each needs.
const COLLECTIVES: &[(&str, &str)] = &[
    ("broadcast", "comm: &Comm, #[root] r: usize"),
    ("reduce", "comm: &Comm, #[root] r: i32"),
    ("all_gather", "comm: &Comm"),
    ("reduce_scatter", "#[comm] c: &Arc<Comm>"),
    ("all_reduce", "comm: &'a Comm"),
    (
        "send_recv",
        "comm: &Comm, #[send_to] a: usize, #[recv_from] b: usize",
    ),
    ("send", "comm: &Comm, #[peer] p: usize"),
    ("all_gather", ""),
];
/// Device buffers (and a few that collectives refuse).
const COLLECTIVE_BUFS: &[(&str, &str)] = &[
    ("&mut CudaSlice<f32>", "&CudaSlice<f32>"),
    ("&mut CudaViewMut<'_, T>", "&CudaView<'_, T>"),
    ("&'a mut CudaSlice<half::f16>", "&'a CudaSlice<half::f16>"),
    ("&mut [f32]", "&[f32]"),
    ("*mut f32", "*const f32"),
    ("&mut CudaSlice<Complex<f32>>", "&CudaSlice<Complex<f32>>"),
];
const GOOD_RETURNS: &[&str] = &[
    "",
    "-> ()",
    "-> Result<(), E>",
    "-> io::Result<()>",
    "-> Out<'_>",
];

/// A rule that could pass the checks (attribute and signature): one `#[dst]`, one `#[src]` of a
/// matching shape, extras, so that the expansion itself is exercised, not only the errors.
fn rule_signature() -> impl Strategy<Value = (String, String)> {
    let slice = (
        prop::sample::select(SLICE_DSTS),
        prop::sample::select(SLICE_SRCS),
    )
        .prop_map(|(d, s)| ("copy".to_string(), d.to_string(), s.to_string(), ""));
    let pointer = (
        prop::sample::select(ELEMS),
        prop::sample::select(&["host", "device", "pinned", "unified"][..]),
    )
        .prop_map(|(e, k)| {
            (
                format!("copy, dst = {k}, src = host, crate = rt"),
                format!("*mut {e}"),
                format!("*const {e}"),
                "#[len] n: usize",
            )
        });
    let collective = (
        prop::sample::select(COLLECTIVES),
        prop::sample::select(COLLECTIVE_BUFS),
    )
        .prop_map(|((k, extra), (d, s))| (k.to_string(), d.to_string(), s.to_string(), extra));
    (
        prop_oneof![slice, pointer, collective],
        prop::sample::select(
            &[
                "",
                "pub",
                "unsafe",
                "pub(crate) unsafe extern \"C\"",
                "const",
            ][..],
        ),
        prop::sample::select(GENERICS),
        prop::collection::vec(prop::sample::select(EXTRA_PARAMS), 0..3),
        any::<bool>(),
        prop::sample::select(GOOD_RETURNS),
        prop::sample::select(WHERE),
    )
        .prop_map(|((attr, d, s, len), q, g, extras, src_first, ret, wh)| {
            let mut params = vec![format!("#[dst] dst: {d}"), format!("#[src] src: {s}")];
            if src_first {
                params.swap(0, 1);
            }
            params.extend(extras.iter().map(|e| (*e).to_string()));
            if !len.is_empty() {
                params.push(len.to_string());
            }
            (
                attr,
                format!("{q} fn f{g}({}) {ret} {wh} {{}}", params.join(", ")),
            )
        })
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// When the user's item is one rustc can parse, so is the macro's output (errors are
/// `compile_error!` items, stubs and generated rules are items).
fn assert_items(item: &TokenStream, out: &TokenStream) {
    if syn::parse2::<syn::File>(item.clone()).is_err() {
        return; // the user's own tokens come back as they were
    }
    if let Err(e) = syn::parse2::<syn::File>(out.clone()) {
        panic!("the expansion is not a list of items ({e}): {out}");
    }
}

proptest! {
    #![proptest_config(config())]

    /// Arbitrary attribute arguments: parsed or reported, never a panic.
    #[test]
    fn arbitrary_attribute_arguments_never_panic(attr in attr_args()) {
        let cx = Ctxt::new();
        let _ = parse_args(&cx, attr.clone());
        let _ = cx.into_compile_errors();
        let item: TokenStream = "fn f(#[dst] d: &mut [f32], #[src] s: &[f32]) {}".parse().unwrap();
        assert_items(&item, &derivative_rule(attr, item.clone()));
    }

    /// Arbitrary signatures through every stage: errors are fine, panics are bugs, and the output
    /// is always well-formed items.
    #[test]
    fn arbitrary_signatures_never_panic(attr in attr_args(), sig in signature()) {
        let Ok(item) = sig.parse::<TokenStream>() else {
            return Ok(());
        };
        let cx = Ctxt::new();
        let args = parse_args(&cx, attr.clone());
        if let Item::Rule(rule) = parse_fn(&cx, args, item.clone()) {
            let _ = check(&cx, &rule);
        }
        let _ = cx.into_compile_errors();
        let out = derivative_rule(attr, item.clone());
        assert_items(&item, &out);
    }

    /// Plausible rules: the same, and a rule that passes every check expands to its three
    /// functions, and they are well-formed items.
    #[test]
    fn plausible_rules_never_panic((attr, sig) in rule_signature()) {
        let item: TokenStream = sig.parse().unwrap();
        let out = derivative_rule(attr.parse().unwrap(), item.clone());
        assert_items(&item, &out);
        let text = out.to_string();
        if !text.contains("compile_error") {
            prop_assert!(text.contains("f_forward") && text.contains("f_reverse"), "{}", text);
        }
    }

    /// Arbitrary tokens as the item: reported, never a panic.
    #[test]
    fn arbitrary_items_never_panic(attr in attr_args(), item in token_stream(12)) {
        let out = derivative_rule(attr, item);
        // Not asserted to be items: the user's own tokens come back as they were.
        let _ = out.to_string();
    }
}
