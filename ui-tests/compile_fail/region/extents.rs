#![allow(unused_variables)]

use rules_runtime::derivative_rule;

#[derivative_rule(copy2d)]
fn no_height(#[dst] d: &mut [f32], #[src] s: &[f32], #[width] w: usize, #[dst_pitch] dp: usize, #[src_pitch] sp: usize) {}

#[derivative_rule(copy2d)]
fn no_src_pitch(#[dst] d: &mut [f32], #[src] s: &[f32], #[width] w: usize, #[height] h: usize, #[dst_pitch] dp: usize) {}

#[derivative_rule(copy3d)]
fn no_slice_heights(
    #[dst] d: &mut [f32],
    #[src] s: &[f32],
    #[width] w: usize,
    #[height] h: usize,
    #[depth] z: usize,
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
) {
}

#[derivative_rule(copy2d)]
fn depth_on_2d(
    #[dst] d: &mut [f32],
    #[src] s: &[f32],
    #[width] w: usize,
    #[height] h: usize,
    #[depth] z: usize,
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
) {
}

#[derivative_rule(copy2d, dst = host, src = host)]
unsafe fn len_on_2d(
    #[dst] d: *mut f32,
    #[src] s: *const f32,
    #[len] n: usize,
    #[width] w: usize,
    #[height] h: usize,
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
) {
}

#[derivative_rule(copy2d)]
fn pitch_in_elements(
    #[dst] d: &mut [f32],
    #[src] s: &[f32],
    #[width] w: usize,
    #[height] h: usize,
    #[dst_pitch] dp: u32,
    #[src_pitch] sp: usize,
) {
}

fn main() {}
