use super::*;
use crate::rules::PrimalOutcome;
use cudarc::driver::DriverError;
use cudarc::driver::sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE;
use std::fmt;

/// A primal's `DriverError`, as it reaches `Error::Primal`: by value, boxed, and through the
/// generated code's conversion.
fn primal_driver_errors() -> [Error; 3] {
    let boxed: PrimalError = Box::new(DriverError(CUDA_ERROR_INVALID_VALUE));
    let returned: core::result::Result<(), DriverError> =
        Err(DriverError(CUDA_ERROR_INVALID_VALUE));
    [
        Error::primal(DriverError(CUDA_ERROR_INVALID_VALUE)),
        Error::primal(boxed),
        returned.into_result().unwrap_err(),
    ]
}

#[test]
fn a_primals_driver_error_formats_without_the_driver() {
    // cudarc's `DriverError` asks the driver for its text when formatted (Display and
    // Debug), which panics where libcuda is missing: this machine, when it has no driver.
    for e in primal_driver_errors() {
        let shown = format!("{e}");
        assert!(shown.contains("CUDA_ERROR_INVALID_VALUE"), "{shown}");
        let debug = format!("{e:?}");
        assert!(debug.contains("CUDA_ERROR_INVALID_VALUE"), "{debug}");
        // The chain: the primal's error is the source, names the code, and gives back
        // cudarc's error.
        let source = std::error::Error::source(&e).expect("a source");
        assert!(source.to_string().contains("CUDA_ERROR_INVALID_VALUE"));
        let held = source
            .downcast_ref::<PrimalDriverError>()
            .expect("held as such");
        assert_eq!(held.code(), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(held.error(), DriverError(CUDA_ERROR_INVALID_VALUE));
        assert!(std::error::Error::source(held).is_none());
    }
}

/// The error shapes a primitive can return, each from a rule the attribute generates (a host
/// copy that fails): the rule's `Error` formats (`Display` and `Debug`) without the driver.
mod shapes {
    use super::*;
    use crate::{Const, CopyRule, derivative_rule};

    fn invalid() -> DriverError {
        DriverError(CUDA_ERROR_INVALID_VALUE)
    }

    /// A user's error type: its own text, the driver's error as its `source()`, and a derived
    /// `Debug` (which shows cudarc's `Debug` of the field: that one needs the driver).
    #[derive(Debug)]
    pub struct Upload {
        n: usize,
        cause: DriverError,
    }
    impl fmt::Display for Upload {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "the upload of {} elements failed", self.n)
        }
    }
    impl std::error::Error for Upload {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.cause)
        }
    }

    #[derivative_rule(copy, crate = crate)]
    fn by_value(#[dst] _d: &mut [f32], #[src] _s: &[f32]) -> core::result::Result<(), DriverError> {
        Err(invalid())
    }
    #[derivative_rule(copy, crate = crate)]
    fn boxed(
        #[dst] _d: &mut [f32],
        #[src] _s: &[f32],
    ) -> core::result::Result<(), Box<DriverError>> {
        Err(Box::new(invalid()))
    }
    #[derivative_rule(copy, crate = crate)]
    fn dyn_boxed(
        #[dst] _d: &mut [f32],
        #[src] _s: &[f32],
    ) -> core::result::Result<(), PrimalError> {
        Err(Box::new(invalid()))
    }
    #[derivative_rule(copy, crate = crate)]
    fn text(#[dst] _d: &mut [f32], #[src] _s: &[f32]) -> core::result::Result<(), String> {
        Err("no room".to_string())
    }
    #[derivative_rule(copy, crate = crate)]
    fn custom(#[dst] _d: &mut [f32], #[src] _s: &[f32]) -> core::result::Result<(), Upload> {
        Err(Upload {
            n: 3,
            cause: invalid(),
        })
    }
    #[derivative_rule(copy, crate = crate)]
    fn custom_boxed(
        #[dst] _d: &mut [f32],
        #[src] _s: &[f32],
    ) -> core::result::Result<(), PrimalError> {
        Err(Box::new(Upload {
            n: 3,
            cause: invalid(),
        }))
    }

    /// `?` on a cudarc call inside a primitive that returns the runtime's `Result`.
    #[derivative_rule(copy, crate = crate)]
    fn question_mark(#[dst] _d: &mut [f32], #[src] _s: &[f32]) -> Result<()> {
        Err(invalid())?;
        Ok(())
    }

    /// Runs `rule`'s forward (the primitive on the primals) and returns its error.
    fn fails<'s>(mut rule: impl CopyRule<'s, [f32], [f32]>) -> Error {
        let (mut y, x) = ([0.0f32; 3], [1.0f32; 3]);
        rule.forward(Const(&mut y[..]), Const(&x[..]))
            .expect_err("the primitive fails")
    }

    #[test]
    fn every_error_shape_of_a_primal_formats_without_the_driver() {
        // (the rule's error, what its Display and Debug must both show)
        let cases = [
            (fails(by_value_rule()), "CUDA_ERROR_INVALID_VALUE"),
            (fails(boxed_rule()), "CUDA_ERROR_INVALID_VALUE"),
            (fails(dyn_boxed_rule()), "CUDA_ERROR_INVALID_VALUE"),
            (
                Error::primal(Box::new(invalid())),
                "CUDA_ERROR_INVALID_VALUE",
            ),
            (fails(text_rule()), "no room"),
            (fails(custom_rule()), "the upload of 3 elements failed"),
            (
                fails(custom_boxed_rule()),
                "the upload of 3 elements failed",
            ),
            (fails(question_mark_rule()), "CUDA_ERROR_INVALID_VALUE"),
        ];
        for (e, want) in cases {
            assert!(
                matches!(e, Error::Primal(_)),
                "a primal's error is `Primal`"
            );
            // Without the driver (this machine, CI), cudarc's own formatting panics.
            let shown = format!("{e}");
            assert!(shown.starts_with("the primal copy failed: "), "{shown}");
            assert!(shown.contains(want), "{shown}");
            let debug = format!("{e:?}");
            assert!(debug.starts_with("Primal("), "{debug}");
            assert!(debug.contains(want), "{debug}");
        }
    }

    #[test]
    fn question_mark_on_a_cudarc_call_is_a_driver_error_outside_a_rule_and_primal_inside() {
        fn users_code() -> Result<()> {
            Err(invalid())?;
            Ok(())
        }
        let e = users_code().unwrap_err();
        let Error::Driver { op, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*op, "a cudarc call");
        assert!(
            format!("{e} {e:?}").contains("CUDA_ERROR_INVALID_VALUE"),
            "{e:?}"
        );
        // The same error raised by a primitive is the primal's: its rule says so.
        let e = fails(question_mark_rule());
        let Error::Primal(held) = &e else {
            panic!("{e:?}")
        };
        assert!(matches!(
            held.downcast_ref::<Error>(),
            Some(Error::Driver { .. })
        ));
    }

    #[test]
    fn a_driver_error_under_a_primals_own_error_shows_its_code_in_debug() {
        for e in [fails(custom_rule()), fails(custom_boxed_rule())] {
            let debug = format!("{e:?}");
            assert!(debug.contains("CUDA_ERROR_INVALID_VALUE"), "{debug}");
        }
    }
}

#[test]
fn other_primal_errors_are_held_as_they_are() {
    let e = Error::primal(std::io::Error::other("disk full"));
    let Error::Primal(held) = &e else {
        panic!("{e:?}")
    };
    assert!(held.downcast_ref::<std::io::Error>().is_some());
    assert_eq!(e.to_string(), "the primal copy failed: disk full");
}
