//! Unit tests of the NCCL layer that need no GPU.

use super::*;

/// Without a driver or without libnccl, asking for NCCL is a typed error, never a panic.
#[test]
fn missing_nccl_is_a_typed_error() {
    match unique_id() {
        Ok(_) => assert!(nccl_available()),
        Err(Error::NoDriver) => assert!(!crate::driver::driver_available()),
        Err(Error::NoNccl) => assert!(!nccl_available()),
        Err(e) => panic!("unexpected error: {e}"),
    }
    if !nccl_available() {
        assert!(matches!(version(), Err(Error::NoDriver | Error::NoNccl)));
    }
}

#[test]
fn ranks_of_every_integer_type() {
    assert_eq!(3u8.rank(), 3);
    assert_eq!((-1i32).rank(), -1);
    assert_eq!(u64::MAX.rank(), i64::MAX);
    assert_eq!((&&7usize).rank(), 7);
}

#[test]
fn error_messages_say_what_to_do() {
    let e = Error::NoNccl.to_string();
    assert!(
        e.contains("LD_LIBRARY_PATH") && e.contains("libnccl.so.2"),
        "{e}"
    );
    let e = Error::InvalidRank {
        what: "the root of `broadcast`",
        rank: 2,
        world_size: 2,
    }
    .to_string();
    assert!(e.contains("0..2"), "{e}");
}

/// An NCCL error code handed to `checked` is an `Err`, also on a machine without libnccl
/// (where asking NCCL for its description would panic in cudarc's loader).
#[test]
fn checked_error_is_an_err_without_nccl() {
    use cudarc::nccl::sys::ncclResult_t;
    let e = checked(
        "all_gather",
        Err::<(), _>(NcclError(ncclResult_t::ncclInvalidUsage)),
    )
    .unwrap_err();
    match e {
        Error::Nccl { op, code, message } => {
            assert_eq!(op, "all_gather");
            assert!(code.contains("ncclInvalidUsage"), "{code}");
            assert!(!message.is_empty());
            if !nccl_available() {
                assert!(message.contains("not loaded"), "{message}");
            }
        }
        e => panic!("unexpected error: {e}"),
    }
}
