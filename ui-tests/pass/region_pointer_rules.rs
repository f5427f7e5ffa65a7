//! Region rules on raw pointers with declared memory kinds: offsets, pitches, runs.

use rules_runtime::{RawFillRule, RawRegionRule};
use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::{Active, Duplicated, derivative_rule};

/// A pitched copy between host rows, at offsets.
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy2d, dst = host, src = host)]
unsafe fn host_rows(
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[dst_pitch] dpitch: usize,
    #[src] src: *const f32,
    #[src_offset] from: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    for r in 0..height {
        unsafe {
            core::ptr::copy_nonoverlapping(
                src.add(from + r * spitch / 4),
                dst.add(at + r * dpitch / 4),
                width,
            )
        }
    }
}

/// A 3-D copy from pinned into device memory (the body would call `cuMemcpy3DAsync`).
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy3d, dst = device, src = pinned, restore)]
unsafe fn upload_volume(
    stream: &CudaStream,
    #[dst] dst: *mut f64,
    #[src] src: *const f64,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[dst_slice_height] dsh: usize,
    #[src_slice_height] ssh: usize,
) {
    let _ = (stream, dst, src, width, height, depth, dpitch, spitch, dsh, ssh);
}

/// `cuMemsetD2D32Async`-style: rows of device memory set to a bit pattern.
#[derivative_rule(memset, dst = device)]
unsafe fn memset_rows(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[value] bits: u32,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let _ = (stream, dst, bits, pitch, width, height);
}

/// A fill of a host run at an offset.
#[derivative_rule(fill, dst = host)]
unsafe fn fill_run(#[dst] dst: *mut f64, #[dst_offset] at: usize, #[len] n: usize, #[value] v: f64) {
    for i in 0..n {
        unsafe { dst.add(at + i).write(v) }
    }
}

fn main() {
    let (mut y, mut dy) = ([0.0f64; 4], [1.0f64; 4]);
    let [dv] = unsafe {
        let t = fill_run_rule(1, 2)
.augmented_primal(
Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
Active(7.0),
)
        .unwrap();
        fill_run_rule(1, 2).reverse(t, Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()), Active(7.0))
            .unwrap()
    };
    assert_eq!((dv, y, dy), (2.0, [0.0, 7.0, 7.0, 0.0], [1.0, 0.0, 0.0, 1.0]));
    let x = [1.0f32; 8];
    let mut z = [0.0f32; 8];
    unsafe {
        host_rows_rule(0, 16, 0, 16, 2, 2)
.forward(
rules_runtime::Const(z.as_mut_ptr()),
rules_runtime::Const(x.as_ptr()),
)
        .unwrap();
    }
    assert_eq!(z, [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
}
