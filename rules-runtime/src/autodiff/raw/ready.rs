//! The core of the ready-made bridged copies ([`crate::autodiff::copies`]): the `extern "C"`
//! bridges of the rule objects in [`super::ready_rules`] (cudarc's copies and memset, memory
//! kinds from the call's own handles), one set per element type, registered with Enzyme here,
//! once, under symbols that carry this crate's version (two versions in one binary each keep
//! their own).
//!
//! Every bridge goes through the same [`super::bridge`] functions as a generated one: the handles'
//! roles, pairing, stream and lengths are checked there, the boxes by the rule object, before the
//! driver is called.

use super::bridge::{Side, bridge_aug, bridge_fwd, bridge_primal, bridge_rev};
use super::ready_rules::{boxes, copy, meta, primal_meta, zero};
use super::tapes::{save, take};
use super::{AdArray, AdBuf, Registration};
use crate::element::Differentiable;
use crate::memory::MemoryKind;
use crate::memory::array::ArrayElement;

/// The element types with ready-made bridges (sealed): the floats (their copies carry
/// derivatives) and the integers (theirs run and carry none). Its methods are the safe bridged
/// calls [`crate::autodiff::copies`] makes.
pub trait Bridged: sealed::Sealed + Sized {
    #[doc(hidden)]
    fn __memcpy(dst: &AdBuf<Self>, src: &AdBuf<Self>);
    #[doc(hidden)]
    fn __memcpy_htod(dst: &AdBuf<Self>, src: &[Self]);
    #[doc(hidden)]
    fn __memcpy_dtoh(dst: &mut [Self], src: &AdBuf<Self>);
    #[doc(hidden)]
    fn __memset_zeros(dst: &AdBuf<Self>);
}

/// The element types whose pitched and CUDA array copies are bridged: `f32`, `f64`.
pub trait BridgedBoxes: Bridged + Differentiable + ArrayElement {
    #[doc(hidden)]
    fn __memcpy_3d(
        dst: &AdBuf<Self>,
        dp: (usize, usize),
        src: &AdBuf<Self>,
        sp: (usize, usize),
        shape: (usize, usize, usize),
    );
    #[doc(hidden)]
    fn __memcpy_3d_htod(
        dst: &AdBuf<Self>,
        dp: (usize, usize),
        src: &[Self],
        sp: (usize, usize),
        shape: (usize, usize, usize),
    );
    #[doc(hidden)]
    fn __upload_array(dst: &AdArray<Self>, src: &AdBuf<Self>);
    #[doc(hidden)]
    fn __download_array(dst: &AdBuf<Self>, src: &AdArray<Self>);
    #[doc(hidden)]
    fn __to_array(
        dst: &AdArray<Self>,
        at: (usize, usize, usize),
        src: &AdBuf<Self>,
        sp: (usize, usize),
        shape: (usize, usize, usize),
    );
    #[doc(hidden)]
    fn __from_array(
        dst: &AdBuf<Self>,
        dp: (usize, usize),
        src: &AdArray<Self>,
        at: (usize, usize, usize),
        shape: (usize, usize, usize),
    );
    #[doc(hidden)]
    fn __array_to_array(
        dst: &AdArray<Self>,
        at: (usize, usize, usize),
        src: &AdArray<Self>,
        from: (usize, usize, usize),
        shape: (usize, usize, usize),
    );
    #[doc(hidden)]
    fn __memcpy_3d_dtoh(
        dst: &mut [Self],
        dp: (usize, usize),
        src: &AdBuf<Self>,
        sp: (usize, usize),
        shape: (usize, usize, usize),
    );
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for u8 {}
    impl Sealed for i8 {}
    impl Sealed for u16 {}
    impl Sealed for i16 {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
}

/// One operation's four bridges and two registrations, for one element type: the primal (with
/// its parameters), the rule object from the stream, and the sides from the C arguments (Enzyme's
/// shadow slots; for the primal, the primals themselves: `Const`). `$args` is the type of the
/// arguments the augmented primal saves with its tape (see `tapes`), this bridge's own.
macro_rules! bridges {
    (
        $sym:expr, $label:literal,
        fn $primal:ident / $aug:ident / $rev:ident / $fwd:ident,
        $args:ident ($($a:ident / $d:ident : $ty:ty),*),
        |$st:ident| $make:expr,
        sides: $dst:expr, $src:expr;
        primal sides: $dstp:expr, $srcp:expr;
    ) => {
        /// The arguments of one call of the bridges beside it (or their shadow slots).
        #[derive(Clone, Copy, PartialEq)]
        pub(in crate::autodiff::raw) struct $args {
            $($a: $ty),*
        }

        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
        #[inline(never)]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::autodiff::raw) unsafe extern "C" fn $primal($($a: $ty),*) {
            // SAFETY: the arguments come from the safe function's references: live handles,
            // slices valid for their lengths.
            unsafe { bridge_primal($label, |$st| $make, $dstp, $srcp) }
        }

        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym, "_aug"))]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::autodiff::raw) unsafe extern "C" fn $aug($($a: $ty, $d: $ty),*) {
            // SAFETY: Enzyme passes the primal's arguments and their shadows.
            let tape = unsafe { bridge_aug($label, |$st| $make, $dst, $src) };
            save($args { $($a),* }, $args { $($a: $d),* }, tape);
        }

        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym, "_rev"))]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::autodiff::raw) unsafe extern "C" fn $rev($($a: $ty, $d: $ty),*) {
            if let Some(tape) = take($label, &$args { $($a),* }, &$args { $($a: $d),* }) {
                // SAFETY: as the augmented primal's; the tape is the one it saved for these
                // arguments.
                unsafe { bridge_rev($label, |$st| $make, $dst, $src, tape) }
            }
        }

        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym, "_fwd"))]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::autodiff::raw) unsafe extern "C" fn $fwd($($a: $ty, $d: $ty),*) {
            // SAFETY: as the augmented primal's.
            unsafe { bridge_fwd($label, |$st| $make, $dst, $src) }
        }

        const _: () = {
            #[unsafe(export_name = concat!("__enzyme_register_gradient_rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
            #[used]
            static GRADIENT: Registration<3> =
                Registration([$primal as *const (), $aug as *const (), $rev as *const ()]);
            #[unsafe(export_name = concat!("__enzyme_register_derivative_rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
            #[used]
            static DERIVATIVE: Registration<2> =
                Registration([$primal as *const (), $fwd as *const ()]);
        };
    };
}

/// [`Bridged`] for the element type `T` of the module it is used in, whose bridges are the
/// functions `memcpy`, `htod`, `dtoh` and `zeros` there (the floats' here, the integers' in
/// `ready_data`).
macro_rules! impl_bridged {
    () => {
        // SAFETY (each call): the pointers and lengths come from the references, held for the
        // call; the bridges check the handles (and the rules the lengths) before any use.
        impl super::super::ready::Bridged for T {
            fn __memcpy(dst: &AdBuf<T>, src: &AdBuf<T>) {
                unsafe { memcpy(dst, src) }
            }
            fn __memcpy_htod(dst: &AdBuf<T>, src: &[T]) {
                unsafe { htod(dst, src.as_ptr().cast_mut(), src.len()) }
            }
            fn __memcpy_dtoh(dst: &mut [T], src: &AdBuf<T>) {
                unsafe { dtoh(dst.as_mut_ptr(), dst.len(), src) }
            }
            fn __memset_zeros(dst: &AdBuf<T>) {
                unsafe { zeros(dst) }
            }
        }
    };
}
pub(super) use impl_bridged;

/// Every operation's bridges for one element type, and its [`Bridged`] implementation. (In the
/// expressions, `meta` reads a handle the bridge's contract keeps live.)
macro_rules! element {
    ($t:ident, $m:ident, $up:ident, $down:ident, $to:ident, $from:ident, $a2a:ident) => {
        pub(super) mod $m {
            use super::*;
            type T = $t;
            const HOST: MemoryKind = MemoryKind::Host;

            bridges! {
                concat!("memcpy_", stringify!($t)), "memcpy",
                fn memcpy / memcpy_aug / memcpy_rev / memcpy_fwd,
                MemcpyArgs(dst / d_dst: *const AdBuf<T>, src / d_src: *const AdBuf<T>),
                |st| copy(st, primal_meta(dst, "dst")?, primal_meta(src, "src")?),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Handle(src, src, meta(src).0);
            }

            bridges! {
                concat!("memcpy_htod_", stringify!($t)), "memcpy_htod",
                fn htod / htod_aug / htod_rev / htod_fwd,
                HtodArgs(dst / d_dst: *const AdBuf<T>, src / d_src: *mut T, n / d_n: usize),
                |st| copy(st, primal_meta(dst, "dst")?, (HOST, n)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Slice(src, n, d_src);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Slice(src, n, src);
            }

            bridges! {
                concat!("memcpy_dtoh_", stringify!($t)), "memcpy_dtoh",
                fn dtoh / dtoh_aug / dtoh_rev / dtoh_fwd,
                DtohArgs(dst / d_dst: *mut T, n / d_n: usize, src / d_src: *const AdBuf<T>),
                |st| copy(st, (HOST, n), primal_meta(src, "src")?),
                sides: Side::Slice(dst, n, d_dst), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Slice(dst, n, dst), Side::Handle(src, src, meta(src).0);
            }

            bridges! {
                concat!("memset_zeros_", stringify!($t)), "memset_zeros",
                fn zeros / zeros_aug / zeros_rev / zeros_fwd,
                ZerosArgs(dst / d_dst: *const AdBuf<T>),
                |st| zero(st, primal_meta(dst, "dst")?),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Absent;
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Absent;
            }

            bridges! {
                concat!("memcpy_3d_", stringify!($t)), "memcpy_3d",
                fn box3 / box3_aug / box3_rev / box3_fwd,
                Box3Args(dst / d_dst: *const AdBuf<T>, dp / d_dp: usize, dr / d_dr: usize,
                     src / d_src: *const AdBuf<T>, sp / d_sp: usize, sr / d_sr: usize,
                     w / d_w: usize, h / d_h: usize, depth / d_depth: usize),
                |st| boxes(st, [primal_meta(dst, "dst")?.0, primal_meta(src, "src")?.0], (dp, dr), (sp, sr), (w, h, depth)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Handle(src, src, meta(src).0);
            }

            bridges! {
                concat!("memcpy_3d_htod_", stringify!($t)), "memcpy_3d_htod",
                fn box3_htod / box3_htod_aug / box3_htod_rev / box3_htod_fwd,
                Box3HtodArgs(dst / d_dst: *const AdBuf<T>, dp / d_dp: usize, dr / d_dr: usize,
                     src / d_src: *mut T, n / d_n: usize, sp / d_sp: usize, sr / d_sr: usize,
                     w / d_w: usize, h / d_h: usize, depth / d_depth: usize),
                |st| boxes(st, [primal_meta(dst, "dst")?.0, HOST], (dp, dr), (sp, sr), (w, h, depth)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Slice(src, n, d_src);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Slice(src, n, src);
            }

            bridges! {
                concat!("memcpy_3d_dtoh_", stringify!($t)), "memcpy_3d_dtoh",
                fn box3_dtoh / box3_dtoh_aug / box3_dtoh_rev / box3_dtoh_fwd,
                Box3DtohArgs(dst / d_dst: *mut T, n / d_n: usize, dp / d_dp: usize, dr / d_dr: usize,
                     src / d_src: *const AdBuf<T>, sp / d_sp: usize, sr / d_sr: usize,
                     w / d_w: usize, h / d_h: usize, depth / d_depth: usize),
                |st| boxes(st, [HOST, primal_meta(src, "src")?.0], (dp, dr), (sp, sr), (w, h, depth)),
                sides: Side::Slice(dst, n, d_dst), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Slice(dst, n, dst), Side::Handle(src, src, meta(src).0);
            }

            use crate::array_rules::{$up, $down, $to, $from, $a2a};

            impl_bridged!();

            // SAFETY (each call): the pointers and lengths come from the references, held for
            // the call; the bridges check the handles and the boxes before any use.
            impl BridgedBoxes for T {
                // The arrays' bridges are the ready-made array rules' own, generated by
                // `#[derivative_rule(.., autodiff(f32, f64))]` in `array_rules`.
                fn __upload_array(dst: &AdArray<T>, src: &AdBuf<T>) {
                    $up(dst, src)
                }
                fn __download_array(dst: &AdBuf<T>, src: &AdArray<T>) {
                    $down(dst, src)
                }
                fn __to_array(dst: &AdArray<T>, (x, y, z): (usize, usize, usize), src: &AdBuf<T>, (sp, sr): (usize, usize), (w, h, d): (usize, usize, usize)) {
                    $to(dst, x, y, z, src, sp, sr, w, h, d)
                }
                fn __from_array(dst: &AdBuf<T>, (dp, dr): (usize, usize), src: &AdArray<T>, (x, y, z): (usize, usize, usize), (w, h, d): (usize, usize, usize)) {
                    $from(dst, dp, dr, src, x, y, z, w, h, d)
                }
                fn __array_to_array(dst: &AdArray<T>, (dx, dy, dz): (usize, usize, usize), src: &AdArray<T>, (sx, sy, sz): (usize, usize, usize), (w, h, d): (usize, usize, usize)) {
                    $a2a(dst, dx, dy, dz, src, sx, sy, sz, w, h, d)
                }
                fn __memcpy_3d(dst: &AdBuf<T>, (dp, dr): (usize, usize), src: &AdBuf<T>, (sp, sr): (usize, usize), (w, h, d): (usize, usize, usize)) {
                    unsafe { box3(dst, dp, dr, src, sp, sr, w, h, d) }
                }
                fn __memcpy_3d_htod(dst: &AdBuf<T>, (dp, dr): (usize, usize), src: &[T], (sp, sr): (usize, usize), (w, h, d): (usize, usize, usize)) {
                    unsafe { box3_htod(dst, dp, dr, src.as_ptr().cast_mut(), src.len(), sp, sr, w, h, d) }
                }
                fn __memcpy_3d_dtoh(dst: &mut [T], (dp, dr): (usize, usize), src: &AdBuf<T>, (sp, sr): (usize, usize), (w, h, d): (usize, usize, usize)) {
                    unsafe { box3_dtoh(dst.as_mut_ptr(), dst.len(), dp, dr, src, sp, sr, w, h, d) }
                }
            }
        }
    };
}

element!(
    f32,
    for_f32,
    upload_array_ad_f32,
    download_array_ad_f32,
    to_array_ad_f32,
    from_array_ad_f32,
    array_to_array_ad_f32
);
element!(
    f64,
    for_f64,
    upload_array_ad_f64,
    download_array_ad_f64,
    to_array_ad_f64,
    from_array_ad_f64,
    array_to_array_ad_f64
);
