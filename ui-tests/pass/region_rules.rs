//! Region rules on slices: pitched 2D and 3D copies, memsets, fills (by value and from a
//! one-element buffer), and `restore`; run on host memory.

use rules_runtime::{FillRule, MemsetRule, RegionRule};
use rules_runtime::{Active, Const, Dual, Duplicated, derivative_rule};

/// Rows of `width` elements, each side's rows its own pitch (bytes) apart.
#[derivative_rule(copy2d)]
fn rows(
    #[dst] dst: &mut [f32],
    #[dst_pitch] dpitch: usize,
    #[src] src: &[f32],
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    for r in 0..height {
        let (d, s) = (r * dpitch / 4, r * spitch / 4);
        dst[d..d + width].copy_from_slice(&src[s..s + width]);
    }
}

/// Slices of rows.
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy3d, restore)]
fn slices(
    #[dst] dst: &mut Vec<f64>,
    #[src] src: &Vec<f64>,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[dst_slice_height] dsh: usize,
    #[src_slice_height] ssh: usize,
) {
    for z in 0..depth {
        for r in 0..height {
            let (d, s) = ((z * dsh + r) * dpitch / 8, (z * ssh + r) * spitch / 8);
            dst[d..d + width].copy_from_slice(&src[s..s + width]);
        }
    }
}

/// A memset of a whole slice to a byte pattern.
#[derivative_rule(memset)]
fn clear(#[dst] dst: &mut [f32], #[value] byte: u8) {
    dst.iter_mut().for_each(|x| *x = f32::from_bits(u32::from_ne_bytes([byte; 4])));
}

/// A fill of rows with a value, restoring the old rows in reverse.
#[derivative_rule(fill, restore)]
fn fill_rows(
    #[dst] dst: &mut [f32],
    #[value] v: f32,
    #[width] width: usize,
    #[height] height: usize,
    #[dst_pitch] pitch: usize,
) {
    for r in 0..height {
        dst[r * pitch / 4..r * pitch / 4 + width].fill(v);
    }
}

/// A fill from a value held in a one-element buffer.
#[derivative_rule(fill)]
fn fill_from(#[dst] dst: &mut [f32], #[value] v: &[f32]) {
    dst.fill(v[0]);
}

fn main() {
    let x = [1.0f32, 2.0, 0.0, 3.0, 4.0, 0.0];
    let (mut dx, mut y, mut dy) = ([0.0f32; 6], [9.0f32; 5], [1.0f32; 5]);
    let t = rows_rule(12, 12, 2, 2)
.augmented_primal(
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&x[..], &mut dx[..]),
)
    .unwrap();
    rows_rule(12, 12, 2, 2)
.reverse(
t,
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&x[..], &mut dx[..]),
)
    .unwrap();
    assert_eq!(y, [1.0, 2.0, 9.0, 3.0, 4.0]);
    assert_eq!(dy, [0.0, 0.0, 1.0, 0.0, 0.0]);
    assert_eq!(dx, [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]);

    let (x, mut y) = (vec![1.0f64; 8], vec![0.0f64; 8]);
    let t = slices_rule(2, 1, 2, 16, 16, 2, 2).augmented_primal(Const(&mut y), Const(&x)).unwrap();
    slices_rule(2, 1, 2, 16, 16, 2, 2).reverse(t, Const(&mut y), Const(&x)).unwrap();
    assert_eq!(y, [0.0; 8]);

    clear_rule(0).forward(Duplicated::new(&mut y0()[..], &mut [1.0f32; 3][..])).unwrap();

    let (mut y, mut dy) = ([0.0f32; 4], [1.0f32; 4]);
    fill_rows_rule(1, 2, 8).forward(Duplicated::new(&mut y[..], &mut dy[..]), Dual::new(2.0, 0.5)).unwrap();
    assert_eq!((y, dy), ([2.0, 0.0, 2.0, 0.0], [0.5, 1.0, 0.5, 1.0]));
    let t = fill_rows_rule(1, 2, 8).augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Active(3.0))
        .unwrap();
    let [dv] =
        fill_rows_rule(1, 2, 8).reverse(t, Duplicated::new(&mut y[..], &mut dy[..]), Active(3.0)).unwrap();
    assert_eq!((dv, y), (1.0, [2.0, 0.0, 2.0, 0.0]));

    let (v, mut dv) = ([5.0f32], [0.0f32]);
    let (mut y, mut dy) = ([0.0f32; 3], [1.0f32; 3]);
    let t = fill_from_rule()
.augmented_primal(
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&v[..], &mut dv[..]),
)
    .unwrap();
    fill_from_rule()
.reverse(
t,
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&v[..], &mut dv[..]),
)
    .unwrap();
    assert_eq!(dv, [3.0]);
}

fn y0() -> [f32; 3] {
    [0.0; 3]
}
