//! `Debug` for [`Error`], which must format without the CUDA driver.

use super::driver::{driver_error_below, driver_error_of};
use super::{Error, PrimalDriverError};
use std::fmt;

/// The sources of a primal's error, for `Debug`: each by its `Display`, a cudarc
/// [`DriverError`] as [`PrimalDriverError`] shows it.
struct Sources<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Debug for Sources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        let mut link = self.0.source();
        while let Some(l) = link {
            match driver_error_of(l) {
                Some(d) => list.entry(&PrimalDriverError(d)),
                None => list.entry(&l.to_string()),
            };
            link = l.source();
        }
        list.finish()
    }
}

/// Formats like a derived `Debug`, except that a primal's cudarc `DriverError` is shown as
/// [`PrimalDriverError`] shows it (cudarc's own `Debug` needs the driver).
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        macro_rules! fields {
            ($name:literal $(, $field:ident)*) => {
                f.debug_struct($name)$(.field(stringify!($field), $field))*.finish()
            };
        }
        match self {
            Error::NoDriver => f.write_str("NoDriver"),
            Error::NoDevice { ordinal, count } => fields!("NoDevice", ordinal, count),
            Error::LengthMismatch {
                what,
                expected,
                found,
            } => {
                fields!("LengthMismatch", what, expected, found)
            }
            Error::RangeOverflow { what, offset, len } => {
                fields!("RangeOverflow", what, offset, len)
            }
            Error::PartialOverlap {
                what,
                dst_start,
                dst_end,
                src_start,
                src_end,
            } => {
                fields!(
                    "PartialOverlap",
                    what,
                    dst_start,
                    dst_end,
                    src_start,
                    src_end
                )
            }
            Error::Aliasing {
                what,
                other,
                start,
                end,
            } => {
                fields!("Aliasing", what, other, start, end)
            }
            Error::TapeMismatch(why) => f.debug_tuple("TapeMismatch").field(why).finish(),
            Error::ContextMismatch {
                what,
                expected,
                found,
            } => {
                fields!("ContextMismatch", what, expected, found)
            }
            Error::BadRegion { what, why } => fields!("BadRegion", what, why),
            Error::UnsupportedKinds { op, dst, src, why } => {
                fields!("UnsupportedKinds", op, dst, src, why)
            }
            Error::NoStream(what) => f.debug_tuple("NoStream").field(what).finish(),
            Error::Capturing { op } => fields!("Capturing", op),
            Error::Driver { op, message } => fields!("Driver", op, message),
            Error::NoNccl => f.write_str("NoNccl"),
            Error::Nccl { op, code, message } => fields!("Nccl", op, code, message),
            Error::InvalidRank {
                what,
                rank,
                world_size,
            } => {
                fields!("InvalidRank", what, rank, world_size)
            }
            Error::NoPeerAccess { from, to } => fields!("NoPeerAccess", from, to),
            Error::PrimalDisagrees(d) => f.debug_tuple("PrimalDisagrees").field(d).finish(),
            Error::Primal(e) => match driver_error_of(&**e) {
                Some(d) => f
                    .debug_tuple("Primal")
                    .field(&PrimalDriverError(d))
                    .finish(),
                // The type's own `Debug` would show cudarc's (a derived one does).
                None if driver_error_below(&**e) => f
                    .debug_tuple("Primal")
                    .field(&e.to_string())
                    .field(&Sources(&**e))
                    .finish(),
                None => f.debug_tuple("Primal").field(e).finish(),
            },
        }
    }
}
