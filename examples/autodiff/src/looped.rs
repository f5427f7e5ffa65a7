//! The loop case: one differentiated function that, 1000 times, uploads x, memsets element 0,
//! fills element 1 with an active value `a` and downloads, on host memory (CI) and on the
//! device. Every iteration's memset and fill overwrite what the upload wrote, so their reverses
//! must zero those cotangents in every iteration: a reverse that missed it once would pass the
//! cotangent on into dx[0] or dx[1], which are exactly 0. The function is differentiated
//! several times in a row, and neither the bridges' tapes (one per augmented primal, freed by
//! its reverse) nor Enzyme's own per-iteration caches may make host or device memory grow.
use super::*;

/// Iterations of the loop.
const ITERS: usize = 1000;
/// Bridge calls per iteration: the upload, the memset, the fill, the download.
const PER_ITER: usize = 4;
/// The input and the fill's value.
const XL: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
const A: f32 = 5.0;
/// Σ_k t_k over the loop, t_k = k mod 4 + 1: 250 · (1 + 2 + 3 + 4).
const T: f32 = 2500.0;
/// After iteration k, h = [0, a, x2, x3] and y += t_k (h0 + h1² + h2² + h3), so
/// y = T (a² + x2² + x3), dy/dx = [0, 0, 2 x2 T, T], dy/da = 2 a T. Every partial sum is an
/// integer below 2^24, so f32 gives them exactly.
const Y_LOOP: f32 = T * (A * A + XL[2] * XL[2] + XL[3]);
const DX_LOOP: [f32; 4] = [0.0, 0.0, 2.0 * XL[2] * T, T];
const DA_LOOP: f32 = 2.0 * A * T;
/// How many differentiations are measured, after the warm-up.
const CALLS_MEASURED: usize = 3;
/// Differentiations before the measured ones: the first makes what then stays (the runtime's
/// pools, the driver's first-use work).
const WARM_UP: usize = 2;
/// The heap (`malloc`'s bytes in use) the measured calls may add in all (here they add none).
/// Leaked tapes would add 4000 heap blocks a call (352,000 B, with the reverses made to leak
/// them); Enzyme's caches for the loop, which it takes from `malloc` and frees at the end of the
/// reverse, are six blocks of 4000 B a call.
const HEAP_SLACK: usize = 16 << 10;
/// The resident set the measured calls may add in all: `malloc` grows and trims its heap in steps
/// of its own (64 KiB between two calls was seen here), so this only catches leaks of that size
/// or more (the leaked tapes grew it by about 360 KiB a call).
const RSS_SLACK: usize = 256 << 10;

/// The weight of iteration `k`.
fn t_of(k: usize) -> f32 {
    (k % 4) as f32 + 1.0
}

/// The loop on pageable host memory: `m` stands for the device buffer.
#[autodiff_reverse(df_host_loop, Duplicated, Active, Active)]
fn f_host_loop(x: &[f32; 4], a: f32) -> f32 {
    let mut m = [1.0f32; 4];
    let mut y = 0.0f32;
    for k in 0..ITERS {
        let mut h = [1.0f32; 4];
        host_copy_ad(&mut m, x, 4);
        host_set_ad(&mut m, 0, 1, 0);
        host_fill_ad(&mut m, 1, 1, a);
        host_copy_ad(&mut h, &m, 4);
        y += t_of(k) * (h[0] + h[1] * h[1] + h[2] * h[2] + h[3]);
    }
    y
}

/// The loop through device memory.
#[autodiff_reverse(df_dev_loop, Duplicated, Duplicated, Active, Active)]
fn f_dev_loop(x: &[f32; 4], dev: &AdBuf<f32>, a: f32) -> f32 {
    let mut y = 0.0f32;
    for k in 0..ITERS {
        let mut h = [1.0f32; 4];
        upload_ad(dev, x, 4);
        set_device_ad(dev, 0, 1, 0);
        fill_device_ad(dev, 1, 1, a);
        download_ad(&mut h, dev, 4);
        y += t_of(k) * (h[0] + h[1] * h[1] + h[2] * h[2] + h[3]);
    }
    y
}

/// This process's resident set, in bytes (Linux; 0 elsewhere, which the limit then passes).
/// Read into a buffer on the stack: an allocation here would be counted by the heap readings
/// beside it (its freed block stays in glibc's per-thread cache, which `mallinfo2` counts).
fn rss() -> usize {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    let Ok(mut f) = std::fs::File::open("/proc/self/status") else {
        return 0;
    };
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let text = std::str::from_utf8(&buf[..n]).unwrap_or("");
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// `malloc`'s bytes in use in the main arena (glibc's `mallinfo2`): Rust's heap and Enzyme's
/// caches alike, both allocated on this thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_in_use() -> Option<usize> {
    /// `struct mallinfo2` (malloc.h): ten `size_t` fields.
    #[repr(C)]
    struct MallInfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    unsafe extern "C" {
        /// glibc 2.33 and later (this binary already needs 2.34); no preconditions.
        safe fn mallinfo2() -> MallInfo2;
    }
    let m = mallinfo2();
    // Allocated chunks of the heap, and those `malloc` took by `mmap`.
    Some(m.uordblks + m.hblkhd)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_in_use() -> Option<usize> {
    None
}

/// One differentiation's results and bridge calls.
struct Sweep {
    y: f32,
    dx: [f32; 4],
    da: f32,
    calls: Calls,
    err: Option<(rules_runtime::autodiff::BridgeError, usize)>,
}

impl Sweep {
    fn exact(&self) -> bool {
        let want = Calls {
            augmented_primal: ITERS * PER_ITER,
            reverse: ITERS * PER_ITER,
            ..Calls::default()
        };
        self.y == Y_LOOP
            && self.dx == DX_LOOP
            && self.da == DA_LOOP
            && self.calls == want
            && self.err.is_none()
    }
}

/// How much the last of `readings` exceeds the first.
fn growth(readings: &[usize]) -> usize {
    readings[readings.len() - 1].saturating_sub(readings[0])
}

/// Runs `sweep` `WARM_UP` times, then `CALLS_MEASURED` times, every call checked
/// exactly; the heap in use, the resident set and `mem` are read after the warm-up and after
/// each measured call. Prints one line; true when every call was exact, the heap grew by less
/// than `HEAP_SLACK`, the resident set by less than `RSS_SLACK`, and `mem_ok` accepts `mem`'s
/// readings.
fn run_loop(
    name: &str,
    mut sweep: impl FnMut() -> Sweep,
    mut mem: impl FnMut() -> Option<usize>,
    mem_ok: impl Fn(&[usize]) -> bool,
    mem_name: &str,
) -> bool {
    // The readings' own storage, allocated before the first reading.
    let mut heap_at = Vec::with_capacity(CALLS_MEASURED + 1);
    let mut rss_at = Vec::with_capacity(CALLS_MEASURED + 1);
    let mut mem_at = Vec::with_capacity(CALLS_MEASURED + 1);
    // The tapes no reverse took, after every call: none (each augmented primal's tape is taken by
    // its reverse).
    let mut pending = Vec::with_capacity(WARM_UP + CALLS_MEASURED);
    let mut first = sweep();
    pending.push(rules_runtime::autodiff::pending_tapes());
    let mut ok = first.exact();
    for _ in 1..WARM_UP {
        first = sweep();
        pending.push(rules_runtime::autodiff::pending_tapes());
        ok &= first.exact();
    }
    heap_at.extend(heap_in_use());
    rss_at.push(rss());
    mem_at.extend(mem());
    let mut last = first;
    for _ in 0..CALLS_MEASURED {
        last = sweep();
        pending.push(rules_runtime::autodiff::pending_tapes());
        ok &= last.exact();
        heap_at.extend(heap_in_use());
        rss_at.push(rss());
        mem_at.extend(mem());
    }
    let heap_line = if heap_at.is_empty() {
        "heap in use: not measured (not glibc)".to_string()
    } else {
        ok &= growth(&heap_at) < HEAP_SLACK;
        format!(
            "heap in use after each = {heap_at:?} B (grew {} B, limit {HEAP_SLACK})",
            growth(&heap_at)
        )
    };
    let grew = growth(&rss_at);
    ok &= grew < RSS_SLACK && mem_ok(&mem_at) && pending.iter().all(|&n| n == 0);
    let mem_line = if mem_at.is_empty() {
        String::new()
    } else {
        format!("; {mem_name} = {mem_at:?} B")
    };
    println!(
        "{name}: {WARM_UP} + {CALLS_MEASURED} differentiations of {ITERS} iterations, the last: f = {} (want {Y_LOOP}), dx = {:?} (want {DX_LOOP:?}), da = {} (want {DA_LOOP}), augmented primals = {}, reverses = {} (want {} each), error = {:?}; tapes pending after each = {pending:?} (want 0); {heap_line}; host RSS after each = {rss_at:?} B (grew {grew} B, limit {RSS_SLACK}){mem_line} -> {}",
        last.y,
        last.dx,
        last.da,
        last.calls.augmented_primal,
        last.calls.reverse,
        ITERS * PER_ITER,
        last.err.as_ref().map(|(e, n)| format!("{e} ({n} in all)")),
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

/// The loop on host memory (the CI case).
pub(crate) fn run_host_loop() -> bool {
    run_loop(
        "host loop (upload, memset, fill a, download; pageable memory)",
        || {
            let c0 = calls();
            let mut dx = [0.0f32; 4];
            let (y, da) = df_host_loop(&XL, &mut dx, A, 1.0);
            Sweep {
                y,
                dx,
                da,
                calls: since(c0),
                err: take_error(),
            }
        },
        || None,
        |_| true,
        "",
    )
}

/// The loop through device memory: besides the host's heap and resident set, the device memory
/// in use (`cuMemGetInfo`) must not change across the measured calls: the driver hands out memory
/// in pages of 2 MiB, so a leak of a few thousand small allocations shows as a whole page.
pub(crate) fn run_dev_loop(
    s: &std::sync::Arc<rules_runtime::cudarc::driver::CudaStream>,
) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut b, mut db) = (s.alloc_zeros::<f32>(4)?, s.alloc_zeros::<f32>(4)?);
    let ctx = s.context().clone();
    let mut pair = AdPair::new(&mut b, &mut db, s)?;
    let (dev, ddev) = pair.split();
    let ok = run_loop(
        "dev loop (upload, device memset, device fill a, download)",
        || {
            let c0 = calls();
            let mut dx = [0.0f32; 4];
            let (y, da) = df_dev_loop(&XL, &mut dx, dev, &mut *ddev, A, 1.0);
            Sweep {
                y,
                dx,
                da,
                calls: since(c0),
                err: take_error(),
            }
        },
        || ctx.mem_get_info().ok().map(|(free, total)| total - free),
        |used| used.len() == CALLS_MEASURED + 1 && used.iter().all(|u| *u == used[0]),
        "device memory in use after each",
    );
    drop(pair);
    s.synchronize()?;
    // Each reverse zeroed the shadow it consumed: the device shadow ends at 0.
    let shadow = s.clone_dtoh(&db)?;
    let prim = s.clone_dtoh(&b)?;
    let after = shadow == [0.0; 4] && prim == [0.0, A, XL[2], XL[3]];
    println!(
        "dev loop buffers after: device primal = {prim:?} (want [0.0, {A:?}, {:?}, {:?}]), device shadow = {shadow:?} (want [0.0; 4]) -> {}",
        XL[2],
        XL[3],
        if after { "OK" } else { "WRONG" }
    );
    Ok(ok && after)
}
