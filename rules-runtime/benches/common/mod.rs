//! Timing shared by the benches (a module, not a bench target).

use rules_runtime::Differentiable;
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, DriverError, sys};
use std::sync::Arc;

/// Median over `reps` repetitions of the time per call, in µs: each repetition is an event, `k`
/// calls back to back, an event (so a call costs what it adds to a stream that is kept busy, as
/// in an AD reverse pass); warm-up first.
#[allow(dead_code)] // a module of each bench: not every bench uses every helper
pub fn median_us_k<E: From<DriverError>>(
    s: &Arc<CudaStream>,
    k: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<f64, E> {
    for _ in 0..3 {
        f()?;
    }
    s.synchronize()?;
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (a, b) = (
        s.context().new_event(timing)?,
        s.context().new_event(timing)?,
    );
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        a.record(s)?;
        for _ in 0..k {
            f()?;
        }
        b.record(s)?;
        b.synchronize()?;
        t.push(f64::from(a.elapsed_ms(&b)?) * 1e3 / k as f64);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[reps / 2])
}

/// Random device data of `n` elements (a cheap generator: the values only need to be non-zero).
#[allow(dead_code)] // a module of each bench: not every bench uses every helper
pub fn random<T: Differentiable + DeviceRepr, E: From<DriverError>>(
    s: &Arc<CudaStream>,
    n: usize,
    seed: u64,
) -> Result<CudaSlice<T>, E> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let host: Vec<T> = (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((x >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0;
            T::from_parts([v / 64.0 + 1e-3, v / 128.0])
        })
        .collect();
    Ok(s.clone_htod(&host)?)
}
