//! Benchmark of the region operations against the driver and cuBLAS, measured in the same run.
//!
//!     cargo bench -p rules-runtime --features testing --bench regions      (on a GPU machine)
//!
//! Same method as `shadow_ops` (CUDA events around k back-to-back calls, warm-up, median).
//! - Strided accumulate-and-zero of a 2D box (`acc[R] += src[R]; src[R] ← 0`: 2 reads + 2 writes
//!   per element) against `cuMemcpy2DAsync` device→device of the same box (1 read + 1 write),
//!   compared in bandwidth (bytes moved per second), at several widths and pitches, odd ones
//!   included.
//! - Reverses with a CUDA array and device memory (`linear += array box; array box ← 0`, and
//!   `array box += linear; linear ← 0`): one pass through the array's surface, against the parts
//!   of the staged route timed alone (the array→linear `cuMemcpy3DAsync`, the accumulate, the
//!   zeroing by the surface-store kernel) and the copy from a zero buffer that the zeroing kernel
//!   replaced.
//! - The deterministic sum (the reverse of `fill`) against cuBLAS `sasum` over the same bytes,
//!   both returning their result to the host (cuBLAS in its default host pointer mode, which
//!   waits for the result, as `sum_region` does); and added on the stream into a value's shadow
//!   (`accumulate_sum_region`, no host wait), the form `x.sum()` in PyTorch has.
//! - The same 2D boxes and sums in f16, bf16 and f64 (same shapes and pitches in elements), and
//!   the sums of complex elements (c32, c64).
//!
//! PyTorch's figures for the same shapes come from `tools/torch-compare/regions.py`, run beside
//! this bench.

use half::{bf16, f16};
use num_complex::Complex;
use rules_runtime::cudarc::cublas::{CudaBlas, sys as blas};
use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits, sys,
};
use rules_runtime::memory::MemoryKind;
use rules_runtime::memory::array::CudaArray;
use rules_runtime::memory::raw::RawShadow;
use rules_runtime::{
    Differentiable, On, Pitched, accumulate_and_zero_region, accumulate_region,
    accumulate_sum_region, sum_region, zero_region,
};
use std::sync::Arc;

mod common;

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn median_us(s: &Arc<CudaStream>, bytes: usize, f: impl FnMut() -> R<()>) -> R<f64> {
    let k = if bytes >= 256 << 20 {
        2
    } else if bytes >= 16 << 20 {
        8
    } else {
        50
    };
    common::median_us_k(s, k, 21, f)
}

fn gbs(bytes: f64, us: f64) -> f64 {
    bytes / us / 1e3
}

/// Non-zero device data.
fn data(s: &Arc<CudaStream>, n: usize, seed: u64) -> R<CudaSlice<f32>> {
    common::random(s, n, seed)
}

/// The 2D boxes of the table in element type `T`: the bench's shapes, pitches scaled from f32
/// elements to `T`'s.
fn boxes<T: Differentiable + DeviceRepr + ValidAsZeroBits>(
    s: &Arc<CudaStream>,
    name: &str,
) -> R<()> {
    let size = size_of::<T>();
    let shapes: [(usize, usize, usize); 8] = [
        (8192, 4096, 8192),
        (8192, 4096, 8200),
        (8191, 4096, 8197),
        (1000, 16384, 1024),
        (333, 65536, 347),
        (3, 1 << 22, 4),
        (1, 1 << 24, 3),
        (1 << 24, 1, 1 << 24),
    ];
    for (w, h, row) in shapes {
        let pitch = row * size;
        let len = (h - 1) * row + w;
        let mut a = common::random::<T, Box<dyn std::error::Error>>(s, len, 1)?;
        let mut b = common::random::<T, Box<dyn std::error::Error>>(s, len, 2)?;
        let r = Pitched::rows(0, w, h, pitch);
        let box_bytes = (w * h * size) as f64;
        let ours = median_us(s, 4 * w * h * size, || {
            Ok(accumulate_and_zero_region(
                On::stream(s),
                &mut a,
                r,
                &mut b,
                r,
            )?)
        })?;
        let acc_only = median_us(s, 3 * w * h * size, || {
            Ok(accumulate_region(On::stream(s), &mut a, r, &b, r)?)
        })?;
        let copy = {
            let (pa, _ga) = a.device_ptr_mut(s);
            let (pb, _gb) = b.device_ptr(s);
            let c = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                srcHost: core::ptr::null(),
                srcDevice: pb,
                srcArray: core::ptr::null_mut(),
                srcPitch: pitch,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: core::ptr::null_mut(),
                dstDevice: pa,
                dstArray: core::ptr::null_mut(),
                dstPitch: pitch,
                WidthInBytes: w * size,
                Height: h,
            };
            let cs = s.cu_stream();
            median_us(s, 2 * w * h * size, || {
                // SAFETY: both boxes lie inside their allocations.
                unsafe { sys::cuMemcpy2DAsync_v2(&c, cs) }.result()?;
                Ok(())
            })?
        };
        let (ours_bw, copy_bw) = (gbs(4.0 * box_bytes, ours), gbs(2.0 * box_bytes, copy));
        println!(
            "| {name} | {w} | {h} | {pitch} | {:.1} | {ours:.1} | {ours_bw:.0} | {acc_only:.1} | {copy:.1} | {copy_bw:.0} | {:.3} |",
            box_bytes / (1 << 20) as f64,
            ours_bw / copy_bw
        );
    }
    Ok(())
}

/// The sums of the table in element type `T`: packed runs of n elements (against `sasum` for
/// f32), then two pitched boxes (pitches scaled from f32 elements to `T`'s).
fn sums<T: Differentiable + DeviceRepr + ValidAsZeroBits>(
    s: &Arc<CudaStream>,
    name: &str,
    blas: Option<&CudaBlas>,
) -> R<()> {
    let size = size_of::<T>();
    let mut value = s.alloc_zeros::<T>(1)?;
    let cases: [(usize, usize, usize); 8] = [
        (1 << 20, 1, 1 << 20),
        (1 << 24, 1, 1 << 24),
        (1 << 26, 1, 1 << 26),
        (1 << 28, 1, 1 << 28),
        (8191, 8192, 8197),
        (3, 1 << 22, 4),
        (1, 1 << 24, 3),
        (8, 1 << 21, 9),
    ];
    for (w, h, row) in cases {
        let n = w * h;
        let x = common::random::<T, Box<dyn std::error::Error>>(s, (h - 1) * row + w, 3)?;
        let r = Pitched::rows(0, w, h, row * size);
        let ours = median_us(s, n * size, || {
            std::hint::black_box(sum_region(On::stream(s), &x, r)?);
            Ok(())
        })?;
        let on_stream = median_us(s, n * size, || {
            Ok(accumulate_sum_region(On::stream(s), &mut value, &x, r)?)
        })?;
        let bytes = (n * size) as f64;
        let what = if h == 1 {
            format!("{n}")
        } else {
            format!("{w}x{h} (pitch {} B)", row * size)
        };
        let sasum = match blas {
            Some(blas) if h == 1 => {
                let (px, _g) = x.device_ptr(s);
                let hb = *blas.handle();
                Some(median_us(s, n * size, || {
                    let mut out = 0.0f32;
                    // SAFETY: `px` holds `n` floats (f32 only); host pointer mode (the default)
                    // writes `out` before returning.
                    unsafe { blas::cublasSasum_v2(hb, n as i32, px as _, 1, &mut out).result()? };
                    std::hint::black_box(out);
                    Ok(())
                })?)
            }
            _ => None,
        };
        let (sa, sa_bw, ratio) = match sasum {
            Some(t) => (
                format!("{t:.1}"),
                format!("{:.0}", gbs(bytes, t)),
                format!("{:.3}", t / ours),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {name} | {what} | {ours:.1} | {:.0} | {sa} | {sa_bw} | {ratio} | {on_stream:.1} | {:.0} |",
            gbs(bytes, ours),
            gbs(bytes, on_stream)
        );
    }
    Ok(())
}

/// The sums of complex elements (`C` = `Complex<F>`): packed runs and the two pitched boxes of
/// [`sums`]. Complex numbers are no cudarc `DeviceRepr`: the data are `2n` reals of type `F`,
/// summed through a raw view of the same bytes as `n` complex elements.
fn complex_sums<F>(s: &Arc<CudaStream>, name: &str) -> R<()>
where
    F: Differentiable + DeviceRepr + ValidAsZeroBits,
    Complex<F>: Differentiable,
{
    let size = 2 * size_of::<F>();
    let mut value = s.alloc_zeros::<F>(2)?;
    let (pv, _gv) = value.device_ptr_mut(s);
    // SAFETY: `value` holds two reals, one complex element, and lives past every use of the view.
    let mut value_c =
        unsafe { RawShadow::new(MemoryKind::Device, pv as *mut Complex<F>, 0, 1, "value")? };
    let cases: [(usize, usize, usize); 5] = [
        (1 << 20, 1, 1 << 20),
        (1 << 24, 1, 1 << 24),
        (1 << 26, 1, 1 << 26),
        (8191, 8192, 8197),
        (3, 1 << 22, 4),
    ];
    for (w, h, row) in cases {
        let n = w * h;
        let len = (h - 1) * row + w;
        let x = common::random::<F, Box<dyn std::error::Error>>(s, 2 * len, 3)?;
        let (px, _gx) = x.device_ptr(s);
        // SAFETY: `x` holds `2 * len` reals, `len` complex elements, and outlives the view.
        let xc = unsafe { RawShadow::new(MemoryKind::Device, px as *mut Complex<F>, 0, len, "x")? };
        let r = Pitched::rows(0, w, h, row * size);
        let ours = median_us(s, n * size, || {
            std::hint::black_box(sum_region(On::stream(s), &xc, r)?);
            Ok(())
        })?;
        let on_stream = median_us(s, n * size, || {
            Ok(accumulate_sum_region(On::stream(s), &mut value_c, &xc, r)?)
        })?;
        let bytes = (n * size) as f64;
        let what = if h == 1 {
            format!("{n}")
        } else {
            format!("{w}x{h} (pitch {} B)", row * size)
        };
        println!(
            "| {name} | {what} | {ours:.1} | {:.0} | - | - | - | {on_stream:.1} | {:.0} |",
            gbs(bytes, ours),
            gbs(bytes, on_stream)
        );
    }
    Ok(())
}

fn main() -> R<()> {
    let ctx = match rules_runtime::cuda::context(0) {
        Ok(c) => c,
        Err(e) => {
            println!("no GPU ({e}): nothing to measure");
            return Ok(());
        }
    };
    let s = ctx.default_stream();
    println!("device: {}", ctx.name()?);
    println!("timing: CUDA events around k back-to-back calls, median of 21 repetitions, per call");

    println!(
        "\n## 2D box: accumulate_and_zero_region vs cuMemcpy2DAsync D2D of the same box (pitch in bytes for f32; the same pitch in elements for the other dtypes)"
    );
    println!(
        "| dtype | width | height | pitch B | box MiB | ours us | ours GB/s (2R+2W) | accumulate only us | cuMemcpy2D us | copy GB/s (R+W) | ours / copy bandwidth |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    boxes::<f32>(&s, "f32")?;
    boxes::<f16>(&s, "f16")?;
    boxes::<bf16>(&s, "bf16")?;
    boxes::<f64>(&s, "f64")?;

    println!(
        "\n## deterministic sum (fill's reverse): to the host (sum_region) vs cuBLAS sasum (f32), and on the stream into a value's shadow (accumulate_sum_region)"
    );
    println!(
        "| dtype | n / box | ours us (host) | ours GB/s | sasum us | sasum GB/s | ours / sasum throughput | ours on the stream us | GB/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let blas = CudaBlas::new(s.clone())?;
    sums::<f32>(&s, "f32", Some(&blas))?;
    sums::<f16>(&s, "f16", None)?;
    sums::<bf16>(&s, "bf16", None)?;
    sums::<f64>(&s, "f64", None)?;
    complex_sums::<f32>(&s, "c32")?;
    complex_sums::<f64>(&s, "c64")?;

    println!(
        "\n## CUDA array reverses with device memory, one pass through the surface, vs the staged route's parts timed alone (f32)"
    );
    println!(
        "| extent | box MiB | linear += array; array ← 0 us | GB/s (2R+2W) | array += linear; linear ← 0 us | array→linear copy us | accumulate us | zero kernel us | staged parts, sum us | one pass / staged | zero copy us (not used) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (w, h, d) in [
        (8192usize, 4096usize, 1usize),
        (4096, 1024, 1),
        (512, 512, 64),
    ] {
        let n = w * h * d;
        let mut arr = CudaArray::<f32>::new(&ctx, w, h, d)?;
        let host: Vec<f32> = (0..n).map(|i| (i % 251) as f32 / 64.0).collect();
        arr.copy_from_host(&s, &host)?;
        let mut acc = data(&s, n, 5)?;
        let mut staged = data(&s, n, 6)?;
        let zeros = s.alloc_zeros::<f32>(n)?;
        let whole = arr.whole();
        let ours = median_us(&s, 4 * n * 4, || {
            Ok(accumulate_and_zero_region(
                On::stream(&s),
                &mut acc,
                whole,
                &mut arr,
                whole,
            )?)
        })?;
        let back = median_us(&s, 4 * n * 4, || {
            Ok(accumulate_and_zero_region(
                On::stream(&s),
                &mut arr,
                whole,
                &mut acc,
                whole,
            )?)
        })?;
        let copy3d = |to_array: bool, lin: u64| {
            let (arr_type, lin_type) = (
                sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
                sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            );
            let side = |array: bool| {
                if array {
                    (arr_type, 0, arr.cu_array())
                } else {
                    (lin_type, lin, core::ptr::null_mut())
                }
            };
            let (st, sd, sa) = side(!to_array);
            let (dt, dd, da) = side(to_array);
            sys::CUDA_MEMCPY3D {
                srcXInBytes: 0,
                srcY: 0,
                srcZ: 0,
                srcLOD: 0,
                srcMemoryType: st,
                srcHost: core::ptr::null(),
                srcDevice: sd,
                srcArray: sa,
                reserved0: core::ptr::null_mut(),
                srcPitch: w * 4,
                srcHeight: h,
                dstXInBytes: 0,
                dstY: 0,
                dstZ: 0,
                dstLOD: 0,
                dstMemoryType: dt,
                dstHost: core::ptr::null_mut(),
                dstDevice: dd,
                dstArray: da,
                reserved1: core::ptr::null_mut(),
                dstPitch: w * 4,
                dstHeight: h,
                WidthInBytes: w * 4,
                Height: h,
                Depth: d,
            }
        };
        let cs = s.cu_stream();
        let (pst, _g1) = staged.device_ptr_mut(&s);
        let (pz, _g2) = zeros.device_ptr(&s);
        let out = copy3d(false, pst);
        let t_out = median_us(&s, 2 * n * 4, || {
            // SAFETY: the whole array into `staged`, which holds `n` floats.
            unsafe { sys::cuMemcpy3DAsync_v2(&out, cs) }.result()?;
            Ok(())
        })?;
        let zero = copy3d(true, pz);
        let t_zero = median_us(&s, 2 * n * 4, || {
            // SAFETY: `zeros` (n floats) into the whole array.
            unsafe { sys::cuMemcpy3DAsync_v2(&zero, cs) }.result()?;
            Ok(())
        })?;
        drop((_g1, _g2));
        let packed = Pitched::slices(0, w, h, d, w * 4, h);
        let t_acc = median_us(&s, 3 * n * 4, || {
            Ok(accumulate_region(
                On::stream(&s),
                &mut acc,
                packed,
                &staged,
                packed,
            )?)
        })?;
        let t_kernel = median_us(&s, n * 4, || {
            Ok(zero_region(On::stream(&s), &mut arr, whole)?)
        })?;
        let parts = t_out + t_acc + t_kernel;
        println!(
            "| {w}x{h}x{d} | {:.1} | {ours:.1} | {:.0} | {back:.1} | {t_out:.1} | {t_acc:.1} | {t_kernel:.1} | {parts:.1} | {:.3} | {t_zero:.1} |",
            (n * 4) as f64 / (1 << 20) as f64,
            gbs((4 * n * 4) as f64, ours),
            ours / parts
        );
    }
    Ok(())
}
