//! Benchmark of the collective rules: the reverse of an all-gather against NCCL's own
//! reduce-scatter, measured in the same run.
//!
//!     NCCL_NVLS_ENABLE=0 cargo bench -p rules-runtime --features testing --bench multi_gpu
//!
//! The reverse rule of an all-gather is NCCL's reduce-scatter (sum) of `d_y` into scratch, then
//! `d_x += scratch` and `d_y ← 0` on the communicator's stream; the ceiling is the reduce-scatter
//! alone, on the same buffers. With two GPUs or more: one thread and one communicator per GPU,
//! CUDA events around `k` back-to-back calls on each rank's stream, the median of the repetitions,
//! the slowest rank. With one GPU the multi-GPU line prints `needs 2 GPUs: skipped`, and the same
//! comparison runs on a communicator of one rank (no transfer: what the rule adds to NCCL's call).
//! `algbw` is NCCL-tests' algorithm bandwidth: the bytes of the reduce-scatter's input per second.

use rules_runtime::CollectiveRule;
use rules_runtime::cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use rules_runtime::cudarc::nccl::ReduceOp;
use rules_runtime::nccl::{self, Comm};
use rules_runtime::{Duplicated, derivative_rule};
use std::sync::Arc;

mod common;

/// [`common::median_us_k`] for this bench's error type.
fn median_us(s: &Arc<CudaStream>, k: usize, reps: usize, f: impl FnMut() -> R<()>) -> R<f64> {
    common::median_us_k(s, k, reps, f)
}

type R<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[derivative_rule(all_gather)]
fn gather(
    comm: &Comm,
    #[src] x: &CudaSlice<f32>,
    #[dst] y: &mut CudaSlice<f32>,
) -> rules_runtime::Result<()> {
    nccl::checked("all_gather", comm.all_gather(x, y))
}

/// (NCCL reduce-scatter µs, reverse of all-gather µs) on one rank, chunk `n` elements.
fn one_rank(s: &Arc<CudaStream>, comm: &Comm, n: usize) -> R<(f64, f64)> {
    let p = comm.world_size();
    let x = s.alloc_zeros::<f32>(n)?;
    let mut dx = s.alloc_zeros::<f32>(n)?;
    let mut y = s.alloc_zeros::<f32>(p * n)?;
    let mut dy = s.clone_htod(&vec![1.0f32; p * n])?;
    let mut out = s.alloc_zeros::<f32>(n)?;
    let (k, reps) = if n <= 1 << 20 { (20, 15) } else { (3, 9) };
    // A reverse consumes its tape: one per timed call (3 warm-up calls, then `k` per rep), made
    // before the timing.
    let mut tapes = Vec::with_capacity(3 + k * reps);
    for _ in 0..3 + k * reps {
        tapes.push(gather_rule(comm).augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?);
    }
    let nccl_us = median_us(s, k, reps, || {
        nccl::checked(
            "reduce_scatter",
            comm.reduce_scatter(&dy, &mut out, &ReduceOp::Sum),
        )?;
        Ok(())
    })?;
    let rule_us = median_us(s, k, reps, || {
        gather_rule(comm).reverse(
            tapes.pop().ok_or("one tape per timed call")?,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?;
        Ok(())
    })?;
    Ok((nccl_us, rule_us))
}

fn print_header(what: &str) {
    println!("\n{what}");
    println!(
        "| dtype | n per rank | NCCL reduce_scatter µs | algbw GB/s | reverse of all_gather µs | algbw GB/s | reverse / reduce_scatter |"
    );
    println!("|---|---|---|---|---|---|---|");
}

fn print_row(p: usize, n: usize, (nccl_us, rule_us): (f64, f64)) {
    let bytes = (p * n * size_of::<f32>()) as f64;
    let gbs = |us: f64| bytes / us / 1e3;
    println!(
        "| f32 | {} | {nccl_us:.2} | {:.0} | {rule_us:.2} | {:.0} | {:.2} |",
        label(n),
        gbs(nccl_us),
        gbs(rule_us),
        rule_us / nccl_us
    );
}

fn label(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

const SIZES: &[usize] = &[1 << 10, 1 << 20, 16 << 20, 64 << 20];

fn main() -> R<()> {
    if let Err(e) = rules_runtime::cuda::context(0) {
        println!("reverse of all_gather vs NCCL reduce_scatter: no GPU ({e}): skipped");
        return Ok(());
    }
    if let Err(e) = nccl::require_nccl() {
        println!("reverse of all_gather vs NCCL reduce_scatter: {e}: skipped");
        return Ok(());
    }
    println!(
        "NCCL {}, NCCL_NVLS_ENABLE={}",
        nccl::version()?,
        std::env::var("NCCL_NVLS_ENABLE").unwrap_or_else(|_| "(unset)".into())
    );
    let p = CudaContext::device_count()? as usize;
    if p >= 2 {
        print_header(&format!(
            "reverse of all_gather vs NCCL reduce_scatter, {p} GPUs (slowest rank, medians)"
        ));
        let id = nccl::unique_id()?;
        for &n in SIZES {
            let times: Vec<R<(f64, f64)>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..p)
                    .map(|r| {
                        scope.spawn(move || -> R<(f64, f64)> {
                            let s = rules_runtime::cuda::stream(r)?;
                            let comm = nccl::comm_from_rank(s.clone(), r, p, id)?;
                            one_rank(&s, &comm, n)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err("a rank panicked".into())))
                    .collect()
            });
            let mut worst = (0.0f64, 0.0f64);
            for t in times {
                let (a, b) = t?;
                worst = (worst.0.max(a), worst.1.max(b));
            }
            print_row(p, n, worst);
        }
    } else {
        println!(
            "\nreverse of all_gather vs NCCL reduce_scatter across GPUs: needs 2 GPUs: skipped ({p} found)"
        );
    }
    print_header(
        "the same on a communicator of one rank (GPU 0; no transfer: the rule's overhead over NCCL's local copy)",
    );
    let s = rules_runtime::cuda::stream(0)?;
    let comm = nccl::single_rank(s.clone())?;
    for &n in SIZES {
        print_row(1, n, one_rank(&s, &comm, n)?);
    }
    Ok(())
}
