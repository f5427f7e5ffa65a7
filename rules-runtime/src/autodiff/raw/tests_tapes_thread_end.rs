//! Tapes left on the stack when their thread ends (a differentiation that panicked between an
//! augmented primal and its reverse): the stack's thread-local destructor drops them, after the
//! thread-locals first used later on that thread are gone, and the thread still ends normally.
use super::AdBuf;
use crate::autodiff::{AdPair, pending_tapes, take_error};

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// A host copy: its augmented primal is a thread's first use of the stack.
#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn te_host(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// Held: a tape left on the stack is dropped by the stack's thread-local destructor, after every
/// thread-local first used later on that thread has been destroyed (destructors run in the
/// reverse order of first use). A tape whose `Drop` uses such a thread-local panics there, and a
/// panic out of a thread-local's destructor aborts the process: the stack drops each entry under
/// `catch_unwind`, so the thread ends. The runtime's own such tape, a `restore` tape in pooled
/// device memory (`Held`, whose `Drop` takes `CurrentContext` and so the pool's `GUARDS`), no
/// longer panics there (`GUARDS` is read with `try_with`:
/// `gpu_a_device_restore_tape_left_at_thread_end_is_freed` below). Here with a tape of the test's
/// own whose `Drop` uses a thread-local with `with`, as `Held`'s did; it aborted the process
/// before the stack caught it.
#[cfg(not(miri))]
#[test]
fn a_pending_tape_needing_a_destroyed_thread_local_does_not_abort_at_thread_end() {
    let name = concat!(
        module_path!(),
        "::a_pending_tape_needing_a_destroyed_thread_local_does_not_abort_at_thread_end"
    );
    super::alone::alone(name, || {
        thread_local! {
            // Stands in for the pool's `GUARDS`: a thread-local with a destructor.
            static LATER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        struct UsesLater;
        impl Drop for UsesLater {
            fn drop(&mut self) {
                LATER.with(|l| l.borrow_mut().push(1));
            }
        }
        #[derive(PartialEq)]
        struct Key(u8);
        std::thread::spawn(|| {
            // The stack first (its destructor registered first, so run last), then the other.
            super::tapes::save(Key(0), Key(0), None);
            LATER.with(|l| l.borrow_mut().push(0));
            super::tapes::save(Key(1), Key(1), Some(Box::new(UsesLater)));
        })
        .join()
        .unwrap();
    });
}

/// A device copy with `restore`: its tape holds the destination's old contents in pooled device
/// memory (`Held`).
#[rules_macro::derivative_rule(copy, dst = device, src = device, restore, crate = crate, autodiff)]
unsafe fn tp_d2d_restore(
    stream: &cudarc::driver::CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> core::result::Result<(), cudarc::driver::DriverError> {
    // SAFETY: the rule's contract.
    unsafe {
        cudarc::driver::sys::cuMemcpyDtoDAsync_v2(dst as u64, src as u64, n * 4, stream.cu_stream())
            .result()
    }
}

/// Held (GPU): the runtime's own case of the test above. On a fresh thread, a host augmented
/// primal (the stack's first use), then a device copy with `restore` (the pool's first use on
/// that thread: its `GUARDS`), neither reversed; when the thread ends, `GUARDS` is destroyed
/// first, then the stack drops the device tape, whose `Held::drop` takes `CurrentContext`, which
/// then reads `GUARDS` with `try_with` (with `with` it panicked, "cannot access a Thread Local
/// Storage value during or after destruction", and the process aborted): the child process
/// passes.
#[cfg(not(miri))]
#[test]
#[ignore = "needs a GPU"]
fn gpu_a_device_restore_tape_left_at_thread_end_is_freed() {
    let name = concat!(
        module_path!(),
        "::gpu_a_device_restore_tape_left_at_thread_end_is_freed"
    );
    super::alone::alone(name, || {
        let s = crate::cuda::stream(0).expect("a GPU");
        let mut a = s.clone_htod(&[1.0f32; 4]).unwrap();
        let mut da = s.alloc_zeros::<f32>(4).unwrap();
        let mut c = s.clone_htod(&[2.0f32; 4]).unwrap();
        let mut dc = s.alloc_zeros::<f32>(4).unwrap();
        {
            let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
            let mut pc = AdPair::new(&mut c, &mut dc, &s).unwrap();
            let (x, dx) = pa.split();
            let (y, dy) = pc.split();
            struct Args([*const AdBuf<f32>; 4]);
            // SAFETY: read on the other thread only while this one waits for it.
            unsafe impl Send for Args {}
            let args = Args([x, dx, y, dy]);
            std::thread::spawn(move || {
                let args = args;
                let [x, dx, y, dy] = args.0;
                let (mut h, mut dh) = ([1.0f32; 2], [0.0f32; 2]);
                let (mut g, mut dg) = ([0.0f32; 2], [0.0f32; 2]);
                // SAFETY: arrays of 2 and their shadows; live handles of two pairs.
                unsafe {
                    rules_ad_te_host_f32_aug(
                        g.as_mut_ptr(),
                        dg.as_mut_ptr(),
                        2,
                        2,
                        h.as_mut_ptr(),
                        dh.as_mut_ptr(),
                        2,
                        2,
                        2,
                        2,
                    );
                    rules_ad_tp_d2d_restore_f32_aug(x, dx, y, dy, 4, 4);
                }
                assert_eq!(error_text(), "");
                assert_eq!(pending_tapes(), 2);
            })
            .join()
            .unwrap();
        }
    });
}
