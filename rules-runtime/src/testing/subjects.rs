//! The rule traits as [`Subject`]s: buffers made from the host image of a call, the rule called
//! with the activities asked for, the buffers read back.

#![forbid(unsafe_code)]

use super::buffers::{Env, TestBuffer, lanes, make_all, read_all};
use super::checks::{Act, Args, Other, Subject};
use crate::activity::{Active, Const, Dual, Duplicated, DuplicatedOnly};
use crate::error::{Error, Result};
use crate::rules::{CopyRule, FillRule, MemsetRule, RegionRule};
use core::marker::PhantomData;

/// The stream's borrow and the buffer types a subject is for.
pub(crate) type Marker<'s, B> = PhantomData<(&'s (), B)>;

/// A batch wider than the checks use.
pub(crate) fn bad_width(width: usize) -> Error {
    Error::LengthMismatch {
        what: "the batch width of a rule check (1, 2 or 3)".to_string(),
        expected: 3,
        found: width,
    }
}

/// A two-buffer rule (`dst ← src`) of trait `$tr`.
macro_rules! two_buffer_subject {
    ($name:ident, $tr:ident) => {
        pub(crate) struct $name<'r, 's, R, X: ?Sized, Y: ?Sized> {
            pub(crate) rule: &'r mut R,
            pub(crate) env: Env,
            /// The destination's and the source's extents.
            pub(crate) ext: [(usize, usize, usize); 2],
            pub(crate) _p: Marker<'s, fn(&X, &Y)>,
        }

        impl<'s, R, X, Y> Subject for $name<'_, 's, R, X, Y>
        where
            R: $tr<'s, X, Y>,
            X: TestBuffer + ?Sized,
            Y: TestBuffer<Elem = X::Elem> + ?Sized,
        {
            type T = X::Elem;
            const OTHER: Other = Other::Src;

            fn forward(&mut self, dst: Act, o: Act, width: usize, a: &mut Args<X::Elem>) -> Result<()> {
                fn go<'s, R: $tr<'s, X, Y>, X: TestBuffer + ?Sized, Y: TestBuffer<Elem = X::Elem> + ?Sized, const N: usize>(
                    rule: &mut R, dst: Act, o: Act,
                    y: &mut X::Owner, dy: &mut [X::Owner], x: &Y::Owner, dx: &mut [Y::Owner],
                ) -> Result<()> {
                    macro_rules! d {
                        (Const) => { Const(X::arg(y)) };
                        ($w:ident) => { $w::batch(X::arg(y), lanes::<X, N>(dy)?) };
                    }
                    macro_rules! s {
                        (Const) => { Const(Y::arg_ref(x)) };
                        ($w:ident) => { $w::batch(Y::arg_ref(x), lanes::<Y, N>(dx)?) };
                    }
                    macro_rules! call {
                        ($d:ident, $s:ident) => { rule.forward(d!($d), s!($s)) };
                    }
                    nine!(dst, o, call)
                }
                let env = &self.env;
                let [de, se] = self.ext;
                let mut y = X::make(env, de, &a.y)?;
                let mut dy = make_all::<X>(env, de, &a.dy)?;
                let x = Y::make(env, se, &a.x)?;
                let mut dx = make_all::<Y>(env, se, &a.dx)?;
                let rule = &mut *self.rule;
                by_width!(width, go[_, X, Y](rule, dst, o, &mut y, &mut dy, &x, &mut dx))?;
                a.y = X::read(env, &y)?;
                a.dy = read_all::<X>(env, &dy)?;
                a.dx = read_all::<Y>(env, &dx)?;
                Ok(())
            }

            fn reverse(&mut self, dst: Act, o: Act, width: usize, a: &mut Args<X::Elem>, aug_only: bool) -> Result<Vec<X::Elem>> {
                #[allow(clippy::too_many_arguments)]
                fn go<'s, R: $tr<'s, X, Y>, X: TestBuffer + ?Sized, Y: TestBuffer<Elem = X::Elem> + ?Sized, const N: usize>(
                    rule: &mut R, dst: Act, o: Act,
                    y: &mut X::Owner, dy: &mut [X::Owner], x: &Y::Owner, dx: &mut [Y::Owner],
                    aug_only: bool,
                ) -> Result<()> {
                    macro_rules! d {
                        (Const) => { Const(X::arg(y)) };
                        ($w:ident) => { $w::batch(X::arg(y), lanes::<X, N>(dy)?) };
                    }
                    macro_rules! s {
                        (Const) => { Const(Y::arg_ref(x)) };
                        ($w:ident) => { $w::batch(Y::arg_ref(x), lanes::<Y, N>(dx)?) };
                    }
                    macro_rules! call {
                        ($d:ident, $s:ident) => {{
                            let tape = rule.augmented_primal(d!($d), s!($s))?;
                            if aug_only {
                                Ok(())
                            } else {
                                rule.reverse(tape, d!($d), s!($s))
                            }
                        }};
                    }
                    nine!(dst, o, call)
                }
                let env = &self.env;
                let [de, se] = self.ext;
                let mut y = X::make(env, de, &a.y)?;
                let mut dy = make_all::<X>(env, de, &a.dy)?;
                let x = Y::make(env, se, &a.x)?;
                let mut dx = make_all::<Y>(env, se, &a.dx)?;
                let rule = &mut *self.rule;
                by_width!(width, go[_, X, Y](rule, dst, o, &mut y, &mut dy, &x, &mut dx, aug_only))?;
                a.y = X::read(env, &y)?;
                a.dy = read_all::<X>(env, &dy)?;
                a.dx = read_all::<Y>(env, &dx)?;
                Ok(vec![])
            }
        }
    };
}

two_buffer_subject!(CopySubject, CopyRule);
two_buffer_subject!(RegionSubject, RegionRule);

/// A `memset` rule.
pub(crate) struct MemsetSubject<'r, 's, R, X: ?Sized> {
    pub(crate) rule: &'r mut R,
    pub(crate) env: Env,
    /// The destination's extent.
    pub(crate) ext: (usize, usize, usize),
    pub(crate) _p: Marker<'s, fn(&X)>,
}

impl<'s, R, X> Subject for MemsetSubject<'_, 's, R, X>
where
    R: MemsetRule<'s, X>,
    X: TestBuffer + ?Sized,
{
    type T = X::Elem;
    const OTHER: Other = Other::None;

    fn forward(&mut self, dst: Act, _: Act, width: usize, a: &mut Args<X::Elem>) -> Result<()> {
        fn go<'s, R: MemsetRule<'s, X>, X: TestBuffer + ?Sized, const N: usize>(
            rule: &mut R,
            dst: Act,
            y: &mut X::Owner,
            dy: &mut [X::Owner],
        ) -> Result<()> {
            match dst {
                Act::Const => rule.forward(Const(X::arg(y))),
                Act::Dup => rule.forward(Duplicated::batch(X::arg(y), lanes::<X, N>(dy)?)),
                Act::Only => rule.forward(DuplicatedOnly::batch(X::arg(y), lanes::<X, N>(dy)?)),
            }
        }
        let env = &self.env;
        let mut y = X::make(env, self.ext, &a.y)?;
        let mut dy = make_all::<X>(env, self.ext, &a.dy)?;
        let rule = &mut *self.rule;
        by_width!(width, go[_, X](rule, dst, &mut y, &mut dy))?;
        a.y = X::read(env, &y)?;
        a.dy = read_all::<X>(env, &dy)?;
        Ok(())
    }

    fn reverse(
        &mut self,
        dst: Act,
        _: Act,
        width: usize,
        a: &mut Args<X::Elem>,
        aug_only: bool,
    ) -> Result<Vec<X::Elem>> {
        fn go<'s, R: MemsetRule<'s, X>, X: TestBuffer + ?Sized, const N: usize>(
            rule: &mut R,
            dst: Act,
            y: &mut X::Owner,
            dy: &mut [X::Owner],
            aug_only: bool,
        ) -> Result<()> {
            macro_rules! call {
                ($d:expr) => {{
                    let tape = rule.augmented_primal($d)?;
                    if aug_only {
                        Ok(())
                    } else {
                        rule.reverse(tape, $d)
                    }
                }};
            }
            match dst {
                Act::Const => call!(Const(X::arg(y))),
                Act::Dup => call!(Duplicated::batch(X::arg(y), lanes::<X, N>(dy)?)),
                Act::Only => call!(DuplicatedOnly::batch(X::arg(y), lanes::<X, N>(dy)?)),
            }
        }
        let env = &self.env;
        let mut y = X::make(env, self.ext, &a.y)?;
        let mut dy = make_all::<X>(env, self.ext, &a.dy)?;
        let rule = &mut *self.rule;
        by_width!(width, go[_, X](rule, dst, &mut y, &mut dy, aug_only))?;
        a.y = X::read(env, &y)?;
        a.dy = read_all::<X>(env, &dy)?;
        Ok(vec![])
    }
}

/// A `fill` rule by value.
pub(crate) struct FillSubject<'r, 's, R, X: ?Sized> {
    pub(crate) rule: &'r mut R,
    pub(crate) env: Env,
    /// The destination's extent.
    pub(crate) ext: (usize, usize, usize),
    pub(crate) _p: Marker<'s, fn(&X)>,
}

impl<'s, R, X> Subject for FillSubject<'_, 's, R, X>
where
    R: FillRule<'s, X>,
    X: TestBuffer + ?Sized,
{
    type T = X::Elem;
    const OTHER: Other = Other::Value;

    fn forward(&mut self, dst: Act, o: Act, width: usize, a: &mut Args<X::Elem>) -> Result<()> {
        fn go<'s, R: FillRule<'s, X>, X: TestBuffer + ?Sized, const N: usize>(
            rule: &mut R,
            dst: Act,
            o: Act,
            y: &mut X::Owner,
            dy: &mut [X::Owner],
            v: X::Elem,
            dv: &[X::Elem],
        ) -> Result<()> {
            macro_rules! d {
                (Const) => {
                    Const(X::arg(y))
                };
                ($w:ident) => {
                    $w::batch(X::arg(y), lanes::<X, N>(dy)?)
                };
            }
            macro_rules! s {
                (Const) => {
                    Const(v)
                };
                (Duplicated) => {
                    Dual::batch(
                        v,
                        <[X::Elem; N]>::try_from(dv).map_err(|_| bad_width(dv.len()))?,
                    )
                };
            }
            macro_rules! call {
                ($d:ident, DuplicatedOnly) => {
                    Err(bad_width(0))
                };
                ($d:ident, $s:ident) => {
                    rule.forward(d!($d), s!($s))
                };
            }
            nine!(dst, o, call)
        }
        let env = &self.env;
        let mut y = X::make(env, self.ext, &a.y)?;
        let mut dy = make_all::<X>(env, self.ext, &a.dy)?;
        let rule = &mut *self.rule;
        by_width!(width, go[_, X](rule, dst, o, &mut y, &mut dy, a.v, &a.dv))?;
        a.y = X::read(env, &y)?;
        a.dy = read_all::<X>(env, &dy)?;
        Ok(())
    }

    fn reverse(
        &mut self,
        dst: Act,
        o: Act,
        width: usize,
        a: &mut Args<X::Elem>,
        aug_only: bool,
    ) -> Result<Vec<X::Elem>> {
        #[allow(clippy::too_many_arguments)]
        fn go<'s, R: FillRule<'s, X>, X: TestBuffer + ?Sized, const N: usize>(
            rule: &mut R,
            dst: Act,
            o: Act,
            y: &mut X::Owner,
            dy: &mut [X::Owner],
            v: X::Elem,
            aug_only: bool,
        ) -> Result<Vec<X::Elem>> {
            macro_rules! d {
                (Const) => {
                    Const(X::arg(y))
                };
                ($w:ident) => {
                    $w::batch(X::arg(y), lanes::<X, N>(dy)?)
                };
            }
            macro_rules! call {
                ($d:ident, Const) => {{
                    let tape = rule.augmented_primal(d!($d), Const(v))?;
                    if !aug_only {
                        rule.reverse(tape, d!($d), Const(v))?;
                    }
                    Ok(vec![])
                }};
                ($d:ident, Duplicated) => {{
                    let tape = rule.augmented_primal(d!($d), Active(v))?;
                    if aug_only {
                        Ok(vec![])
                    } else {
                        Ok(rule.reverse(tape, d!($d), Active(v))?.to_vec())
                    }
                }};
                ($d:ident, DuplicatedOnly) => {
                    Err(bad_width(0))
                };
            }
            nine!(dst, o, call)
        }
        let env = &self.env;
        let mut y = X::make(env, self.ext, &a.y)?;
        let mut dy = make_all::<X>(env, self.ext, &a.dy)?;
        let rule = &mut *self.rule;
        let g = by_width!(width, go[_, X](rule, dst, o, &mut y, &mut dy, a.v, aug_only))?;
        a.y = X::read(env, &y)?;
        a.dy = read_all::<X>(env, &dy)?;
        Ok(g)
    }
}
