//! The inputs of the property tests: arbitrary tokens, attribute arguments and signatures, built
//! from the macro's own words, their near misses, and noise.

use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use proptest::prelude::*;

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

pub fn token_stream(max: usize) -> impl Strategy<Value = TokenStream> {
    prop::collection::vec(token_tree(), 0..max).prop_map(|tts| tts.into_iter().collect())
}

/// Attribute arguments: mostly plausible (`key = value` pieces), sometimes pure noise.
pub fn attr_args() -> impl Strategy<Value = TokenStream> {
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
    "#[dst_x]",
    "#[src_y]",
    "#[src_z]",
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
    "&mut CudaArray<f32>",
    "&CudaArray<T>",
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
pub fn signature() -> impl Strategy<Value = String> {
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
    "&mut CudaArray<f32>",
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
    "&rules_runtime::memory::array::CudaArray<f32>",
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
pub fn rule_signature() -> impl Strategy<Value = (String, String)> {
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

pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}
