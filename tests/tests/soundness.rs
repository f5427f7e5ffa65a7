//! Regression tests of the runtime's promises on host memory (the GPU ones are in `gpu.rs`):
//! every lane is checked before the first write, shadows may not alias primals or other lanes,
//! a tape belongs to its call, and a memory implementation that breaks its contract gets an
//! error, not an out-of-bounds access.

use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::memory::{DeviceAddr, Region};
use rules_runtime::{
    Const, Duplicated, Error, MemoryKind, ShadowMemory, ShadowRead, derivative_rule,
};
use rules_runtime::{CopyRule, RawCopyRule};
use rules_tests::copy_slice_rule;
use rules_tests::{copy_ptr, copy_ptr_rule};

/// Host memory that claims whatever kind (and length) it is told to: how a user's buffer type
/// with a run-time kind looks to the runtime.
struct Tagged {
    data: Vec<f64>,
    kind: MemoryKind,
    /// The length it reports (its real one unless a test makes it lie).
    claims: usize,
}

fn tagged(data: &[f64], kind: MemoryKind) -> Tagged {
    Tagged {
        data: data.to_vec(),
        kind,
        claims: data.len(),
    }
}

// SAFETY: host memory of `data`; `claims` may be wrong only in the test that checks the runtime
// refuses a length its host view does not have (it never reads past the view).
unsafe impl ShadowRead for Tagged {
    type Elem = f64;
    fn kind(&self) -> MemoryKind {
        self.kind
    }
    fn len(&self) -> usize {
        self.claims
    }
    fn region(&self) -> Region {
        Region::of::<f64>(self.data.as_ptr() as u64, self.data.len())
    }
    fn host(&self) -> rules_runtime::Result<Option<&[f64]>> {
        Ok(self.kind.host_accessible().then_some(&self.data[..]))
    }
    fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

// SAFETY: as above.
unsafe impl ShadowMemory for Tagged {
    fn host_mut(&mut self) -> rules_runtime::Result<Option<&mut [f64]>> {
        Ok(self.kind.host_accessible().then_some(&mut self.data[..]))
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

#[derivative_rule(copy)]
fn copy_tagged(#[dst] dst: &mut Tagged, #[src] src: &Tagged) {
    dst.data.copy_from_slice(&src.data);
}

/// A lane that fails (here: memory the runtime cannot touch, or device memory without a stream)
/// leaves every lane before it untouched: all lanes are planned before the first one runs.
#[test]
fn a_failing_lane_leaves_the_lanes_before_it_untouched() {
    for bad in [MemoryKind::Array, MemoryKind::Device] {
        let x = [1.0, 2.0];
        let mut y = tagged(&[0.0; 2], MemoryKind::Host);
        let (mut dx0, mut dx1) = (tagged(&[1.0; 2], MemoryKind::Host), tagged(&[1.0; 2], bad));
        let (mut dy0, mut dy1) = (
            tagged(&[5.0, 6.0], MemoryKind::Host),
            tagged(&[7.0, 8.0], MemoryKind::Host),
        );
        let xs = tagged(&x, MemoryKind::Host);
        let tape = copy_tagged_rule()
            .augmented_primal(
                Duplicated::batch(&mut y, [&mut dy0, &mut dy1]),
                Duplicated::batch(&xs, [&mut dx0, &mut dx1]),
            )
            .unwrap();
        let e = copy_tagged_rule()
            .reverse(
                tape,
                Duplicated::batch(&mut y, [&mut dy0, &mut dy1]),
                Duplicated::batch(&xs, [&mut dx0, &mut dx1]),
            )
            .unwrap_err();
        assert!(
            matches!(e, Error::UnsupportedKinds { .. } | Error::NoStream(_)),
            "{bad:?}: {e}"
        );
        assert_eq!(
            dx0.data, [1.0; 2],
            "{bad:?}: lane 0's source shadow untouched"
        );
        assert_eq!(dy0.data, [5.0, 6.0], "{bad:?}: lane 0's cotangent not lost");
        assert_eq!((&dx1.data, &dy1.data), (&vec![1.0; 2], &vec![7.0, 8.0]));
    }
}

/// A memory type whose length disagrees with its host view gets an error, never a read or write
/// past the view.
#[test]
fn a_length_the_host_view_does_not_have_is_an_error() {
    let xs = tagged(&[1.0, 2.0], MemoryKind::Host);
    let mut y = tagged(&[0.0; 2], MemoryKind::Host);
    let mut dx = tagged(&[0.0; 2], MemoryKind::Host);
    let mut dy = tagged(&[3.0, 4.0], MemoryKind::Host);
    dx.claims = 2;
    let tape = copy_tagged_rule()
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&xs, &mut dx),
        )
        .unwrap();
    // Lies from here on: claims 2 elements, has 1.
    dx.data.truncate(1);
    let e = copy_tagged_rule()
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&xs, &mut dx),
        )
        .unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    assert_eq!((&dx.data, &dy.data), (&vec![0.0], &vec![3.0, 4.0]));
}

/// A shadow that shares memory with a primal, or with another lane's shadow, is refused before
/// anything is written (pointer rules, where nothing else stops it).
#[test]
fn shadows_aliasing_primals_or_other_lanes_are_refused() {
    let mut buf = vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let before = buf.clone();
    let p = buf.as_mut_ptr();
    let (x, y) = (p, unsafe { p.add(2) });
    let (dx, dy) = (unsafe { p.add(4) }, unsafe { p.add(6) });
    // d_src is the primal `dst`.
    let e = unsafe {
        copy_ptr_rule(0, 0, 2)
            .augmented_primal(Duplicated::new(y, dy), Duplicated::new(x as *const f64, y))
    }
    .unwrap_err();
    assert!(matches!(e, Error::Aliasing { .. }), "{e}");
    // Two lanes share one source shadow.
    let e = unsafe {
        copy_ptr_rule(0, 0, 1).augmented_primal(
            Duplicated::batch(y, [dy, dy.add(1)]),
            Duplicated::batch(x as *const f64, [dx, dx]),
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::Aliasing { .. }), "{e}");
    // Lane 1's destination shadow overlaps lane 0's source shadow.
    let e = unsafe {
        copy_ptr_rule(0, 0, 2).augmented_primal(
            Duplicated::batch(y, [dy, dx.add(1)]),
            Duplicated::batch(x as *const f64, [dx, dy.add(1)]),
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::Aliasing { .. }), "{e}");
    assert_eq!(buf, before, "nothing was written");
    // The forward rule checks the same.
    let e = unsafe {
        rules_tests::copy_ptr_rule(0, 0, 2)
            .forward(Duplicated::new(y, x), Duplicated::new(x as *const f64, dx))
    }
    .unwrap_err();
    assert!(matches!(e, Error::Aliasing { .. }), "{e}");
    assert_eq!(buf, before, "nothing was written");
    let _ = copy_ptr::<f64>;
}

/// The tape of one call, handed to the reverse of another call of the same shape on other
/// buffers, is refused: the reverse would otherwise move cotangents the tape knows nothing of.
#[test]
fn a_tape_belongs_to_its_call() {
    let (xa, xb) = ([1.0f32, 2.0], [3.0f32, 4.0]);
    let (mut ya, mut yb) = ([0.0f32; 2], [0.0f32; 2]);
    let (mut dxa, mut dya) = ([0.0f32; 2], [0.0f32; 2]);
    let (mut dxb, mut dyb) = ([0.0f32; 2], [1.0f32; 2]);
    let tape_a = copy_slice_rule()
        .augmented_primal(
            Duplicated::new(&mut ya[..], &mut dya[..]),
            Duplicated::new(&xa[..], &mut dxa[..]),
        )
        .unwrap();
    let tape_b = copy_slice_rule()
        .augmented_primal(
            Duplicated::new(&mut yb[..], &mut dyb[..]),
            Duplicated::new(&xb[..], &mut dxb[..]),
        )
        .unwrap();
    let e = copy_slice_rule()
        .reverse(
            tape_a,
            Duplicated::new(&mut yb[..], &mut dyb[..]),
            Duplicated::new(&xb[..], &mut dxb[..]),
        )
        .unwrap_err();
    assert!(matches!(e, Error::TapeMismatch(_)), "{e}");
    assert_eq!((dxb, dyb), ([0.0; 2], [1.0; 2]), "nothing moved");
    // Its own tape works; seeding the cotangent into a fresh buffer is fine.
    let mut fresh = [1.0f32, 1.0];
    copy_slice_rule()
        .reverse(
            tape_b,
            Duplicated::new(&mut yb[..], &mut fresh[..]),
            Duplicated::new(&xb[..], &mut dxb[..]),
        )
        .unwrap();
    assert_eq!((dxb, fresh), ([1.0; 2], [0.0; 2]));
    // Pointer rules too (their tapes also carry offsets).
    let (mut u, mut v) = (vec![1.0f64; 4], vec![0.0f64; 4]);
    let (mut w, mut z) = (vec![1.0f64; 4], vec![0.0f64; 4]);
    let t = unsafe {
        copy_ptr_rule(0, 0, 4)
            .augmented_primal(Const(v.as_mut_ptr()), Const(u.as_mut_ptr() as *const f64))
    }
    .unwrap();
    let e = unsafe {
        copy_ptr_rule(0, 0, 4).reverse(
            t,
            Const(z.as_mut_ptr()),
            Const(w.as_mut_ptr() as *const f64),
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::TapeMismatch(_)), "{e}");
}
