//! Element types that carry derivatives.

use half::{bf16, f16};
use num_complex::Complex;

/// The element types a shadow can hold, as named in kernels and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `half::f16`
    F16,
    /// `half::bf16`
    Bf16,
    /// `num_complex::Complex<f32>`
    C32,
    /// `num_complex::Complex<f64>`
    C64,
}

impl Dtype {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::F32 => 4,
            Dtype::F64 | Dtype::C32 => 8,
            Dtype::C64 => 16,
        }
    }

    /// The name used in reports and kernel names.
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::C32 => "c32",
            Dtype::C64 => "c64",
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type whose values have derivatives: `f32`, `f64`, `f16`, `bf16`,
/// `Complex<f32>` and `Complex<f64>`.
///
/// Sealed: the runtime's kernels exist for exactly these types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a differentiable element type",
    label = "derivative rules need floating-point or complex elements",
    note = "supported element types: f32, f64, half::f16, half::bf16, num_complex::Complex<f32>, num_complex::Complex<f64>",
    note = "integers and booleans carry no derivative: copy them with a plain function, without `#[derivative_rule]`"
)]
pub trait Differentiable:
    sealed::Sealed + Copy + Send + Sync + PartialEq + core::fmt::Debug + 'static
{
    /// The runtime name of this type.
    const DTYPE: Dtype;
    /// The additive identity.
    fn zero() -> Self;
    /// `a + b`, in the type's own arithmetic.
    fn add(a: Self, b: Self) -> Self;
    /// The real parts making up this value (1 for reals, 2 for complex), as `f64`; for checks.
    fn to_parts(self) -> [f64; 2];
    /// Builds a value from real parts (the second is ignored for real types); for checks.
    fn from_parts(parts: [f64; 2]) -> Self;
    /// How many real parts a value has (1 or 2).
    const PARTS: usize;
    /// The bits of each real part (the second 0 for reals): what the checked mode compares.
    #[doc(hidden)]
    fn __bits(self) -> [u64; 2];
}

macro_rules! real {
    ($t:ty, $d:ident, $zero:expr, $to:expr, $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Differentiable for $t {
            const DTYPE: Dtype = Dtype::$d;
            const PARTS: usize = 1;
            #[inline]
            fn zero() -> Self {
                $zero
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline]
            fn to_parts(self) -> [f64; 2] {
                [($to)(self), 0.0]
            }
            #[inline]
            fn from_parts(p: [f64; 2]) -> Self {
                ($from)(p[0])
            }
            #[inline]
            fn __bits(self) -> [u64; 2] {
                [u64::from(self.to_bits()), 0]
            }
        }
    };
}

real!(f32, F32, 0.0, |x: f32| x as f64, |x: f64| x as f32);
real!(f64, F64, 0.0, |x: f64| x, |x: f64| x);
real!(f16, F16, f16::ZERO, f16::to_f64, f16::from_f64);
real!(bf16, Bf16, bf16::ZERO, bf16::to_f64, bf16::from_f64);

macro_rules! complex {
    ($t:ty, $d:ident) => {
        impl sealed::Sealed for Complex<$t> {}
        impl Differentiable for Complex<$t> {
            const DTYPE: Dtype = Dtype::$d;
            const PARTS: usize = 2;
            #[inline]
            fn zero() -> Self {
                Complex::new(0.0, 0.0)
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline]
            fn to_parts(self) -> [f64; 2] {
                [self.re as f64, self.im as f64]
            }
            #[inline]
            fn from_parts(p: [f64; 2]) -> Self {
                Complex::new(p[0] as $t, p[1] as $t)
            }
            #[inline]
            fn __bits(self) -> [u64; 2] {
                [u64::from(self.re.to_bits()), u64::from(self.im.to_bits())]
            }
        }
    };
}

complex!(f32, C32);
complex!(f64, C64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_rust_types() {
        assert_eq!(Dtype::F32.size(), size_of::<f32>());
        assert_eq!(Dtype::F64.size(), size_of::<f64>());
        assert_eq!(Dtype::F16.size(), size_of::<f16>());
        assert_eq!(Dtype::Bf16.size(), size_of::<bf16>());
        assert_eq!(Dtype::C32.size(), size_of::<Complex<f32>>());
        assert_eq!(Dtype::C64.size(), size_of::<Complex<f64>>());
    }

    #[test]
    fn parts_round_trip() {
        let c = Complex::new(1.5f32, -2.0);
        assert_eq!(Complex::<f32>::from_parts(c.to_parts()), c);
        assert_eq!(
            bf16::from_parts(bf16::from_f32(3.0).to_parts()),
            bf16::from_f32(3.0)
        );
    }
}
