//! The `#[derivative_rule]` attribute. Use it through `rules-runtime`, which re-exports it.
//!
//! One pipeline for every rule kind, each stage on `proc_macro2` tokens so it is unit-testable
//! (`expand::derivative_rule` runs them in order):
//!
//! 1. `args` and `parse`: the attribute and the function, read into a `Rule`, the words taken
//!    from `model` (kinds, roles, memory kinds, keywords: the leaf every stage reads);
//! 2. `check`: one `check_*` function per rule of use, all errors gathered in a `ctxt::Ctxt`,
//!    the result one `plan::Plan` whatever the kind;
//! 3. `expand`: one generator driven by the plan, in which only `expand::bodies` depends on the
//!    kind, with `docs` for the generated rule item's documentation; or, on error, `fallback`.
//!
//! `types` reads what can be read from a type's tokens; `text` words the messages.

mod args;
mod check;
mod ctxt;
mod docs;
mod expand;
mod fallback;
mod model;
mod parse;
mod place;
mod plan;
#[cfg(test)]
mod tests;
mod text;
mod types;

use proc_macro::TokenStream;

/// Generates derivative rules for a copy primitive or an NCCL collective.
///
/// `#[derivative_rule(copy)]` on a function that copies one source into one destination, with
/// the roles marked on its parameters, generates next to it one item, `<name>_rule`: a tuple
/// struct of the function's other arguments (everything but its buffers, in order) implementing
/// the runtime's rule trait of the kind, whose methods are the rules: `forward(dst, src)`,
/// `augmented_primal(dst, src)` and `reverse(tape, dst, src)`, the buffers as activities. See the
/// `rules-runtime` crate (its `prelude`) for the traits, the semantics and examples.
///
/// - Slice-shaped: `#[dst] dst: &mut X`, `#[src] src: &Y` (`[T]`, `Vec<T>`, cudarc buffers, or
///   any type implementing `ShadowMemory`).
/// - Pointer-shaped: `#[dst] dst: *mut T`, `#[src] src: *const T`, `#[len] n: usize`, and
///   optionally `#[dst_offset]`, `#[src_offset]`; the memory kinds are declared in the attribute:
///   `#[derivative_rule(copy, dst = device, src = host)]` (`host`, `pinned`, `device`, `unified`).
/// - A CUDA stream parameter (`&CudaStream`, `&Arc<CudaStream>`, or marked `#[stream]`) orders the
///   shadow work after the copy on that stream. A parameter taken by reference whose type the
///   macro cannot read (an alias, a newtype, a struct of yours implementing
///   `rules_runtime::ops::AsStream`, a generic) is the stream too, and the compiler checks that
///   it is one; two such are an error asking for `#[stream]`.
/// - No other parameter may silently change which elements the primitive writes: on a copy,
///   memset, fill or pitched copy, an unmarked integer, flag, range or value (`start: usize`,
///   `skip: bool`, `by: f32`) or a type the macro cannot read is refused at the parameter, with
///   the choices named: slice the buffer at the call, take the pointer form (`#[dst_offset]`,
///   `#[len]`), give it its role, or mark it `#[inert]`: the user's word that it changes neither
///   which elements are written nor their values (a label, a counter, a chunk size). Labels
///   (`&str`, `&String`) and contexts (`&Arc<CudaContext>`) pass as they are.
/// - A parameter's doc comments (which rustc does not allow on parameters) are taken off the
///   primal into the rule item's documentation.
/// - Options: `crate = path` (a renamed runtime), `rule = name` (the rule item's name), and
///   `in_impl` for an associated function of an inherent `impl` block (no struct can be declared
///   there: `Self::name_rule(...)` is an associated function returning the rule object, which
///   calls the primal as `Self::name`). A method's receiver is written as an ordinary parameter
///   there, `this: &Self`: the stream (with `AsStream` for `Self`) or `#[inert]`.
/// - A parameter under `#[cfg(...)]` is configured out of the rule object with it.
/// - An `unsafe fn` on references gets an `unsafe` constructor (whose contract covers every call
///   of the rule's methods); a pointer rule's methods are `unsafe` themselves.
/// - A copy between devices (a peer copy) is a `copy` rule: its reverse accumulates across them.
///
/// Region rules work on a box of their destination and never touch what lies outside it
/// (padding between rows included):
///
/// - `#[derivative_rule(copy2d)]` / `copy3d`: a pitched copy, `#[width]` (elements per row),
///   `#[height]` (rows), `#[dst_pitch]` and `#[src_pitch]` (bytes between rows), and for 3-D
///   `#[depth]` (slices), `#[dst_slice_height]` and `#[src_slice_height]` (rows between slices).
/// - `#[derivative_rule(memset)]`: a bit pattern written over the box (`#[value] bits: u32`, not
///   differentiable: passed through); the shadows' boxes are zeroed. A value of the element type
///   written over the box is a `fill`.
/// - `#[derivative_rule(fill)]`: a value of the element type, `#[value] v: T` (its activity is
///   `Const` or `Dual` in forward mode, `Const` or `Active` in reverse mode, whose reverse
///   returns `d_v` per lane as `[T; N]`), or held in a one-element buffer,
///   `#[value] v: &CudaSlice<T>` (`Duplicated` like any buffer).
/// - A memset or fill takes rows (`#[width]`, `#[height]`, `#[dst_pitch]`), a run (`#[len]`,
///   pointer rules), or, on a reference, the whole buffer.
/// - A CUDA array side (`&mut CudaArray<T>` / `&CudaArray<T>`) has no pitch: its box starts at
///   `#[dst_x]`, `#[dst_y]` (`#[dst_z]` for 3-D), or `#[src_x]`, `#[src_y]`, `#[src_z]`, in
///   elements, rows and slices; a plain `copy` with an array side moves the whole array. The
///   rule needs its stream (docs/arrays.md).
/// - `restore` (`#[derivative_rule(copy2d, restore)]`, any kind that overwrites its destination,
///   `copy` included): the augmented primal saves the old box into the tape, and the reverse
///   writes it back after the shadow work.
///
/// `autodiff` (`autodiff(f32, f64)` for a rule generic over its element type), on a pointer
/// `copy`, `copy2d`, `copy3d`, `memset` or `fill`: also the bridges through which Rust's nightly `std::autodiff` (Enzyme) calls the rule
/// object's methods, and `<name>_ad`, the safe function to call inside the differentiated
/// function; emitted only with the runtime's `autodiff` feature (see the repository's
/// docs/autodiff.md).
///
/// NCCL collectives have their own kinds, each with its adjoint: `broadcast` and `reduce`
/// (`#[root]`), `all_gather`, `reduce_scatter`, `all_reduce`, `send` (`#[src]` only) and `recv`
/// (`#[dst]` only) with `#[peer]`, `send_recv` with `#[send_to]` and `#[recv_from]`. The
/// communicator is the `&Comm` parameter (or the one marked `#[comm]`); the buffers are cudarc
/// device buffers (`#[src]` the input `x`, `#[dst]` the output `y`).
///
/// Every misuse is a compile error at the token at fault, all of them in one compile (the
/// catalogue is `ui-tests/compile_fail`). On error the function is still emitted, with stand-ins
/// for the rule item, so the rest of the crate reports nothing more.
#[proc_macro_attribute]
pub fn derivative_rule(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::derivative_rule(attr.into(), item.into()).into()
}
