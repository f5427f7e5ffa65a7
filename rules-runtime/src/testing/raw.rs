//! Rule checks of pointer rules: each side's buffers are memory of the kind the rule declares
//! for it ([`super::pointers`]: `Vec`s for host memory; device, pinned or unified memory on the
//! rule's context), passed by their addresses. The checks' [`Subject`]s here can only be made
//! by the `unsafe` functions, whose callers vouch for the rule's offsets and lengths.

use super::buffers::Env;
use super::checks::{Act, Args, Other, Subject, check_all};
use super::pointers::{Ptrs, lanes as ptrs, with_buffers};
use super::report::{CheckError, Report, Shapes};
use super::subjects::Marker;
use super::subjects::bad_width;
use crate::activity::{Active, Const, Dual, Duplicated, DuplicatedOnly};
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::MemoryKind;
use crate::rules::{RawCopyRule, RawFillRule, RawMemsetRule, RawRegionRule};
use core::marker::PhantomData;

/// A pointer rule of two buffers, of trait `$tr`.
macro_rules! raw_two_buffer {
    ($name:ident, $tr:ident) => {
        /// Made only by the `unsafe` check functions: their callers vouch for the pointers.
        struct $name<'r, 's, R, T> {
            rule: &'r mut R,
            env: Env,
            /// The declared kinds of `dst` and `src`.
            kinds: [MemoryKind; 2],
            _p: Marker<'s, T>,
        }

        impl<'s, R: $tr<'s, T>, T: Differentiable> Subject for $name<'_, 's, R, T> {
            type T = T;
            const OTHER: Other = Other::Src;

            fn forward(&mut self, dst: Act, o: Act, width: usize, a: &mut Args<T>) -> Result<()> {
                fn go<'s, R: $tr<'s, T>, T: Differentiable, const N: usize>(
                    rule: &mut R, dst: Act, o: Act, p: &mut Ptrs<T>,
                ) -> Result<()> {
                    let (y, x) = (p.y, p.x);
                    macro_rules! d {
                        (Const) => { Const(y) };
                        ($w:ident) => { $w::batch(y, ptrs::<T, N>(&p.dy)?) };
                    }
                    macro_rules! s {
                        (Const) => { Const(x) };
                        ($w:ident) => { $w::batch(x, ptrs::<T, N>(&p.dx)?) };
                    }
                    // SAFETY: the caller of the check function vouched that the rule's
                    // offsets and lengths fit these buffers, which are of the kinds the rule
                    // declares and live until `with_buffers` has waited for the work on them.
                    macro_rules! call {
                        ($d:ident, $s:ident) => { unsafe { rule.forward(d!($d), s!($s)) } };
                    }
                    nine!(dst, o, call)
                }
                let rule = &mut *self.rule;
                with_buffers(&self.env, self.kinds, a, |p| by_width!(width, go[_, _](rule, dst, o, p)))
            }

            fn reverse(&mut self, dst: Act, o: Act, width: usize, a: &mut Args<T>, aug_only: bool) -> Result<Vec<T>> {
                fn go<'s, R: $tr<'s, T>, T: Differentiable, const N: usize>(
                    rule: &mut R, dst: Act, o: Act, p: &mut Ptrs<T>, aug_only: bool,
                ) -> Result<()> {
                    let (y, x) = (p.y, p.x);
                    macro_rules! d {
                        (Const) => { Const(y) };
                        ($w:ident) => { $w::batch(y, ptrs::<T, N>(&p.dy)?) };
                    }
                    macro_rules! s {
                        (Const) => { Const(x) };
                        ($w:ident) => { $w::batch(x, ptrs::<T, N>(&p.dx)?) };
                    }
                    // SAFETY: as in `forward`.
                    macro_rules! call {
                        ($d:ident, $s:ident) => {{
                            let tape = unsafe { rule.augmented_primal(d!($d), s!($s))? };
                            if aug_only {
                                Ok(())
                            } else {
                                unsafe { rule.reverse(tape, d!($d), s!($s)) }
                            }
                        }};
                    }
                    nine!(dst, o, call)
                }
                let rule = &mut *self.rule;
                with_buffers(&self.env, self.kinds, a, |p| {
                    by_width!(width, go[_, _](rule, dst, o, p, aug_only))
                })?;
                Ok(vec![])
            }
        }
    };
}

raw_two_buffer!(RawCopySubject, RawCopyRule);
raw_two_buffer!(RawRegionSubject, RawRegionRule);

/// A pointer `memset`; made only by [`check_raw_memset`].
struct RawMemsetSubject<'r, 's, R, T> {
    rule: &'r mut R,
    env: Env,
    /// The declared kind of `dst` (and host memory for the source it does not have).
    kinds: [MemoryKind; 2],
    _p: Marker<'s, T>,
}

impl<'s, R: RawMemsetRule<'s, T>, T: Differentiable> Subject for RawMemsetSubject<'_, 's, R, T> {
    type T = T;
    const OTHER: Other = Other::None;

    fn forward(&mut self, dst: Act, _: Act, width: usize, a: &mut Args<T>) -> Result<()> {
        fn go<'s, R: RawMemsetRule<'s, T>, T: Differentiable, const N: usize>(
            rule: &mut R,
            dst: Act,
            p: &mut Ptrs<T>,
        ) -> Result<()> {
            let y = p.y;
            // SAFETY: the caller of `check_raw_memset` vouched for the rule's box.
            unsafe {
                match dst {
                    Act::Const => rule.forward(Const(y)),
                    Act::Dup => rule.forward(Duplicated::batch(y, ptrs::<T, N>(&p.dy)?)),
                    Act::Only => rule.forward(DuplicatedOnly::batch(y, ptrs::<T, N>(&p.dy)?)),
                }
            }
        }
        let rule = &mut *self.rule;
        with_buffers(
            &self.env,
            self.kinds,
            a,
            |p| by_width!(width, go[_, _](rule, dst, p)),
        )
    }

    fn reverse(
        &mut self,
        dst: Act,
        _: Act,
        width: usize,
        a: &mut Args<T>,
        aug_only: bool,
    ) -> Result<Vec<T>> {
        fn go<'s, R: RawMemsetRule<'s, T>, T: Differentiable, const N: usize>(
            rule: &mut R,
            dst: Act,
            p: &mut Ptrs<T>,
            aug_only: bool,
        ) -> Result<()> {
            let y = p.y;
            // SAFETY: as in `forward`.
            macro_rules! call {
                ($d:expr) => {{
                    let tape = unsafe { rule.augmented_primal($d)? };
                    if aug_only {
                        Ok(())
                    } else {
                        unsafe { rule.reverse(tape, $d) }
                    }
                }};
            }
            match dst {
                Act::Const => call!(Const(y)),
                Act::Dup => call!(Duplicated::batch(y, ptrs::<T, N>(&p.dy)?)),
                Act::Only => call!(DuplicatedOnly::batch(y, ptrs::<T, N>(&p.dy)?)),
            }
        }
        let rule = &mut *self.rule;
        with_buffers(
            &self.env,
            self.kinds,
            a,
            |p| by_width!(width, go[_, _](rule, dst, p, aug_only)),
        )?;
        Ok(vec![])
    }
}

/// A pointer `fill`; made only by [`check_raw_fill`].
struct RawFillSubject<'r, 's, R, T> {
    rule: &'r mut R,
    env: Env,
    /// The declared kind of `dst` (and host memory for the source it does not have).
    kinds: [MemoryKind; 2],
    _p: Marker<'s, T>,
}

impl<'s, R: RawFillRule<'s, T>, T: Differentiable> Subject for RawFillSubject<'_, 's, R, T> {
    type T = T;
    const OTHER: Other = Other::Value;

    fn forward(&mut self, dst: Act, o: Act, width: usize, a: &mut Args<T>) -> Result<()> {
        fn go<'s, R: RawFillRule<'s, T>, T: Differentiable, const N: usize>(
            rule: &mut R,
            dst: Act,
            o: Act,
            p: &mut Ptrs<T>,
        ) -> Result<()> {
            let (y, v) = (p.y, p.v);
            let dv: Vec<T> = p.dv.clone();
            macro_rules! d {
                (Const) => {
                    Const(y)
                };
                ($w:ident) => {
                    $w::batch(y, ptrs::<T, N>(&p.dy)?)
                };
            }
            macro_rules! s {
                (Const) => {
                    Const(v)
                };
                (Duplicated) => {
                    Dual::batch(
                        v,
                        <[T; N]>::try_from(&dv[..]).map_err(|_| bad_width(dv.len()))?,
                    )
                };
            }
            // SAFETY: the caller of `check_raw_fill` vouched for the rule's box.
            macro_rules! call {
                ($d:ident, DuplicatedOnly) => {
                    Err(bad_width(0))
                };
                ($d:ident, $s:ident) => {
                    unsafe { rule.forward(d!($d), s!($s)) }
                };
            }
            nine!(dst, o, call)
        }
        let rule = &mut *self.rule;
        with_buffers(
            &self.env,
            self.kinds,
            a,
            |p| by_width!(width, go[_, _](rule, dst, o, p)),
        )
    }

    fn reverse(
        &mut self,
        dst: Act,
        o: Act,
        width: usize,
        a: &mut Args<T>,
        aug_only: bool,
    ) -> Result<Vec<T>> {
        fn go<'s, R: RawFillRule<'s, T>, T: Differentiable, const N: usize>(
            rule: &mut R,
            dst: Act,
            o: Act,
            p: &mut Ptrs<T>,
            aug_only: bool,
        ) -> Result<Vec<T>> {
            let (y, v) = (p.y, p.v);
            macro_rules! d {
                (Const) => {
                    Const(y)
                };
                ($w:ident) => {
                    $w::batch(y, ptrs::<T, N>(&p.dy)?)
                };
            }
            // SAFETY: as in `forward`.
            macro_rules! call {
                ($d:ident, Const) => {{
                    let tape = unsafe { rule.augmented_primal(d!($d), Const(v))? };
                    if !aug_only {
                        unsafe { rule.reverse(tape, d!($d), Const(v))? };
                    }
                    Ok(vec![])
                }};
                ($d:ident, Duplicated) => {{
                    let tape = unsafe { rule.augmented_primal(d!($d), Active(v))? };
                    if aug_only {
                        Ok(vec![])
                    } else {
                        Ok(unsafe { rule.reverse(tape, d!($d), Active(v))? }.to_vec())
                    }
                }};
                ($d:ident, DuplicatedOnly) => {
                    Err(bad_width(0))
                };
            }
            nine!(dst, o, call)
        }
        let rule = &mut *self.rule;
        with_buffers(
            &self.env,
            self.kinds,
            a,
            |p| by_width!(width, go[_, _](rule, dst, o, p, aug_only)),
        )
    }
}

/// Checks a pointer `copy` rule, as [`check_copy`](super::check_copy), through the addresses of
/// buffers of `shapes.dst` and `shapes.src` elements, each of the memory kind the rule declares
/// for its side: `Vec`s for `host`; for `device`, `pinned` and `unified`, memory of that kind on
/// the context of the rule's stream (device 0 for a rule that names none). A CUDA array has no
/// address (`Error::UnsupportedKinds`).
///
/// # Safety
/// The rule's primitive, called on pointers to the starts of such buffers (primals and shadows
/// alike) with the rule object's other arguments (offsets, lengths), is sound: every range it
/// reads or writes lies within `shapes`, and it reaches each side as memory of its declared kind
/// (a host copy does not read a device address).
pub unsafe fn check_raw_copy<'s, T, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let (on, plan) = rule.__plan();
    let env = Env::of(on);
    let mut s = RawCopySubject {
        kinds: [plan.dst_kind, plan.src_kind],
        rule,
        env,
        _p: PhantomData,
    };
    check_all(&mut s, shapes)
}

/// Checks a pointer region rule (`copy2d`, `copy3d`); see [`check_raw_copy`].
///
/// # Safety
/// As [`check_raw_copy`], for every row of the rule's boxes.
pub unsafe fn check_raw_region<'s, T, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    T: Differentiable,
    R: RawRegionRule<'s, T>,
{
    let (on, plan, _) = rule.__plan();
    let env = Env::of(on);
    let mut s = RawRegionSubject {
        kinds: [plan.dst_kind, plan.src_kind],
        rule,
        env,
        _p: PhantomData,
    };
    check_all(&mut s, shapes)
}

/// Checks a pointer `memset` rule; see [`check_raw_copy`].
///
/// # Safety
/// As [`check_raw_copy`], for the destination.
pub unsafe fn check_raw_memset<'s, T, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    T: Differentiable,
    R: RawMemsetRule<'s, T>,
{
    let (on, plan, _) = rule.__plan();
    let env = Env::of(on);
    let mut s = RawMemsetSubject {
        kinds: [plan.dst_kind, MemoryKind::Host],
        rule,
        env,
        _p: PhantomData,
    };
    check_all(&mut s, shapes)
}

/// Checks a pointer `fill` rule; see [`check_raw_copy`].
///
/// # Safety
/// As [`check_raw_copy`], for the destination.
pub unsafe fn check_raw_fill<'s, T, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    T: Differentiable,
    R: RawFillRule<'s, T>,
{
    let (on, plan, _) = rule.__plan();
    let env = Env::of(on);
    let mut s = RawFillSubject {
        kinds: [plan.dst_kind, MemoryKind::Host],
        rule,
        env,
        _p: PhantomData,
    };
    check_all(&mut s, shapes)
}
