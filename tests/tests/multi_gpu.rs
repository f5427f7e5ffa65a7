//! Multi-GPU suite: collective rules through NCCL, and peer copies across CUDA contexts.
//!
//! Every test here is `#[ignore]`d, so that a machine without a GPU reports it as *ignored*
//! (skipped), never as passed. On a machine with one GPU and NCCL, run
//! `--include-ignored --skip two_gpus`: the `single_rank_*` tests run every collective rule through
//! NCCL with a communicator of one rank (where each collective is a local copy), and the `peer_*`
//! tests copy between two CUDA contexts of device 0 (a primary and a non-primary one), which takes
//! the same staged path as a copy between two devices. The `two_gpus_*` tests need two GPUs (one
//! thread and one communicator per GPU) and fail, saying so, on fewer. NCCL's NVLink multicast
//! must be off: `NCCL_NVLS_ENABLE=0`.
//!
//! Values are small multiples of 1/64 in f64, so every sum here is exact and the expected
//! gradients are compared with `==`.

use rules_runtime::cudarc::driver::{CudaContext, CudaSlice, CudaStream, DriverError};
use rules_runtime::cudarc::nccl::ReduceOp;
use rules_runtime::nccl::{self, Comm};
use rules_runtime::testing::{dot, random_vec};
use rules_runtime::{CollectiveRule, CopyRule, RawCopyRule, RecvRule, SendRule};
use rules_runtime::{CollectiveTape, Const, Duplicated, Error, On, derivative_rule, peer};
use rules_tests::{download_rule, upload_rule};
use std::sync::Arc;

type Res = rules_runtime::Result<()>;

// ---- Primitives, as a user writes them ---------------------------------------------------------
// (`upload` and `download`, host ↔ device, are the crate library's.)

/// Device → device, also between contexts or devices (cudarc's peer path); `stream` is `dst`'s.
#[derivative_rule(copy)]
fn peer_copy(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f64>,
    #[src] src: &CudaSlice<f64>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// Device → device through raw pointers (unified addressing finds both devices).
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn raw_copy(
    stream: &CudaStream,
    #[dst] dst: *mut f64,
    #[src] src: *const f64,
    #[len] n: usize,
) -> Result<(), DriverError> {
    let bytes = n * size_of::<f64>();
    let s = stream.cu_stream();
    unsafe {
        rules_runtime::cudarc::driver::sys::cuMemcpyAsync(dst as u64, src as u64, bytes, s).result()
    }
}

#[derivative_rule(broadcast)]
fn bcast(
    comm: &Comm,
    #[root] root: usize,
    #[src] x: &CudaSlice<f64>,
    #[dst] y: &mut CudaSlice<f64>,
) -> Res {
    nccl::checked("broadcast", comm.broadcast(Some(x), y, root as i32))
}

#[derivative_rule(reduce)]
fn reduce_to(
    comm: &Comm,
    #[root] root: usize,
    #[src] x: &CudaSlice<f64>,
    #[dst] y: &mut CudaSlice<f64>,
) -> Res {
    nccl::checked(
        "reduce",
        comm.reduce(x, Some(y), &ReduceOp::Sum, root as i32),
    )
}

#[derivative_rule(all_gather)]
fn gather(comm: &Comm, #[src] x: &CudaSlice<f64>, #[dst] y: &mut CudaSlice<f64>) -> Res {
    nccl::checked("all_gather", comm.all_gather(x, y))
}

#[derivative_rule(reduce_scatter)]
fn scatter(comm: &Comm, #[src] x: &CudaSlice<f64>, #[dst] y: &mut CudaSlice<f64>) -> Res {
    nccl::checked("reduce_scatter", comm.reduce_scatter(x, y, &ReduceOp::Sum))
}

#[derivative_rule(all_reduce)]
fn sum_all(comm: &Comm, #[src] x: &CudaSlice<f64>, #[dst] y: &mut CudaSlice<f64>) -> Res {
    nccl::checked("all_reduce", comm.all_reduce(x, y, &ReduceOp::Sum))
}

#[derivative_rule(send)]
fn send_to(comm: &Comm, #[peer] peer: usize, #[src] x: &CudaSlice<f64>) -> Res {
    nccl::checked("send", comm.send(x, peer as i32))
}

#[derivative_rule(recv)]
fn recv_from(comm: &Comm, #[peer] peer: usize, #[dst] y: &mut CudaSlice<f64>) -> Res {
    nccl::checked("recv", comm.recv(y, peer as i32))
}

/// `x` to `to`, `y` from `from`, in one NCCL group (a ring shift; with one rank, a copy).
#[derivative_rule(send_recv)]
fn shift(
    comm: &Comm,
    #[send_to] to: usize,
    #[recv_from] from: usize,
    #[src] x: &CudaSlice<f64>,
    #[dst] y: &mut CudaSlice<f64>,
) -> Res {
    nccl::checked("group_start", rules_runtime::cudarc::nccl::group_start())?;
    let sent = comm.send(x, to as i32);
    let received = comm.recv(y, from as i32);
    nccl::checked("group_end", rules_runtime::cudarc::nccl::group_end())?;
    nccl::checked("send", sent)?;
    nccl::checked("recv", received)
}

// ---- Helpers -----------------------------------------------------------------------------------

fn gpu() -> Arc<CudaStream> {
    rules_runtime::cuda::stream(0).unwrap_or_else(|e| {
        panic!("the multi-GPU suite needs a usable GPU ({e}); without one it stays ignored")
    })
}

fn single_rank(s: &Arc<CudaStream>) -> Comm {
    nccl::single_rank(s.clone()).unwrap_or_else(|e| {
        panic!("the multi-GPU suite needs NCCL ({e}); put libnccl.so on LD_LIBRARY_PATH")
    })
}

fn dev(s: &Arc<CudaStream>, v: &[f64]) -> CudaSlice<f64> {
    s.clone_htod(v).unwrap()
}

fn host(b: &CudaSlice<f64>) -> Vec<f64> {
    let s = b.stream();
    let mut out = vec![0.0; b.len()];
    s.memcpy_dtoh(b, &mut out[..]).unwrap();
    s.synchronize().unwrap();
    out
}

fn zeros(s: &Arc<CudaStream>, n: usize) -> CudaSlice<f64> {
    s.alloc_zeros(n).unwrap()
}

fn scaled(v: &[f64], k: f64) -> Vec<f64> {
    v.iter().map(|a| a * k).collect()
}

use rules_runtime::nccl::Op;
/// What a collective computes on each rank's host values (the runtime's model of NCCL).
use rules_runtime::testing::collective_model as model;

/// The seed's example through a collective: host `x` → upload → collective → download, then
/// `f = Σ y²`, so the seed is `d_y = 2y`; reverse through all three. Returns `(y, dx)` on the
/// host and checks that every intermediate shadow was zeroed on the way back.
#[allow(clippy::type_complexity)]
fn seed_round_trip(
    s: &Arc<CudaStream>,
    x: &[f64],
    y_len: usize,
    aug: &dyn Fn(
        &CudaSlice<f64>,
        &mut CudaSlice<f64>,
        &mut CudaSlice<f64>,
        &mut CudaSlice<f64>,
    ) -> rules_runtime::Result<CollectiveTape>,
    rev: &dyn Fn(
        CollectiveTape,
        &CudaSlice<f64>,
        &mut CudaSlice<f64>,
        &mut CudaSlice<f64>,
        &mut CudaSlice<f64>,
    ) -> Res,
) -> (Vec<f64>, Vec<f64>) {
    let mut dx = vec![0.0; x.len()];
    let (mut xd, mut dxd) = (zeros(s, x.len()), zeros(s, x.len()));
    let (mut yd, mut dyd) = (zeros(s, y_len), zeros(s, y_len));
    let (mut y, mut dy) = (vec![0.0; y_len], vec![0.0; y_len]);
    let t1 = upload_rule(s)
        .augmented_primal(
            Duplicated::new(&mut xd, &mut dxd),
            Duplicated::new(x, &mut dx[..]),
        )
        .unwrap();
    let t2 = aug(&xd, &mut dxd, &mut yd, &mut dyd).unwrap();
    let t3 = download_rule(s)
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&yd, &mut dyd),
        )
        .unwrap();
    s.synchronize().unwrap();
    dy = scaled(&y, 2.0);
    download_rule(s)
        .reverse(
            t3,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&yd, &mut dyd),
        )
        .unwrap();
    rev(t2, &xd, &mut dxd, &mut yd, &mut dyd).unwrap();
    upload_rule(s)
        .reverse(
            t1,
            Duplicated::new(&mut xd, &mut dxd),
            Duplicated::new(x, &mut dx[..]),
        )
        .unwrap();
    s.synchronize().unwrap();
    assert!(dy.iter().all(|v| *v == 0.0), "d_y on the host is zeroed");
    assert!(
        host(&dyd).iter().all(|v| *v == 0.0),
        "d_y on the device is zeroed"
    );
    assert!(
        host(&dxd).iter().all(|v| *v == 0.0),
        "d_x on the device is zeroed"
    );
    (y, dx)
}

// ---- One GPU: collectives on a communicator of one rank ----------------------------------------

/// x → collective → y, seed d_y = 2y, and back: with one rank every collective is the identity,
/// so `y == x` and `dx == 2x` exactly, through NCCL, for every collective rule with an input and
/// an output.
#[test]
#[ignore = "needs a CUDA GPU and NCCL"]
fn single_rank_seed_round_trip_through_every_collective() {
    let s = gpu();
    let comm = single_rank(&s);
    let x = random_vec::<f64>(1000, 1);
    let n = x.len();
    let want = scaled(&x, 2.0);
    let c = &comm;
    type Aug<'a> = Box<
        dyn Fn(
                &CudaSlice<f64>,
                &mut CudaSlice<f64>,
                &mut CudaSlice<f64>,
                &mut CudaSlice<f64>,
            ) -> rules_runtime::Result<CollectiveTape>
            + 'a,
    >;
    type Rev<'a> = Box<
        dyn Fn(
                CollectiveTape,
                &CudaSlice<f64>,
                &mut CudaSlice<f64>,
                &mut CudaSlice<f64>,
                &mut CudaSlice<f64>,
            ) -> Res
            + 'a,
    >;
    fn aug<'a>(
        f: impl Fn(
            &CudaSlice<f64>,
            &mut CudaSlice<f64>,
            &mut CudaSlice<f64>,
            &mut CudaSlice<f64>,
        ) -> rules_runtime::Result<CollectiveTape>
        + 'a,
    ) -> Aug<'a> {
        Box::new(f)
    }
    fn rev<'a>(
        f: impl Fn(
            CollectiveTape,
            &CudaSlice<f64>,
            &mut CudaSlice<f64>,
            &mut CudaSlice<f64>,
            &mut CudaSlice<f64>,
        ) -> Res
        + 'a,
    ) -> Rev<'a> {
        Box::new(f)
    }
    let cases: Vec<(&str, Aug<'_>, Rev<'_>)> = vec![
        (
            "broadcast",
            aug(|x, dx, y, dy| {
                bcast_rule(c, 0).augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
            rev(|t, x, dx, y, dy| {
                bcast_rule(c, 0).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
        ),
        (
            "reduce",
            aug(|x, dx, y, dy| {
                reduce_to_rule(c, 0)
                    .augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
            rev(|t, x, dx, y, dy| {
                reduce_to_rule(c, 0).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
        ),
        (
            "all_gather",
            aug(|x, dx, y, dy| {
                gather_rule(c).augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
            rev(|t, x, dx, y, dy| {
                gather_rule(c).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
        ),
        (
            "reduce_scatter",
            aug(|x, dx, y, dy| {
                scatter_rule(c).augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
            rev(|t, x, dx, y, dy| {
                scatter_rule(c).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
        ),
        (
            "all_reduce",
            aug(|x, dx, y, dy| {
                sum_all_rule(c).augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
            rev(|t, x, dx, y, dy| {
                sum_all_rule(c).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
        ),
        (
            "send_recv (to itself)",
            aug(|x, dx, y, dy| {
                shift_rule(c, 0, 0).augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
            rev(|t, x, dx, y, dy| {
                shift_rule(c, 0, 0).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            }),
        ),
    ];
    for (name, aug, rev) in &cases {
        let (y, dx) = seed_round_trip(&s, &x, n, aug.as_ref(), rev.as_ref());
        assert_eq!(y, x, "{name}: y");
        assert_eq!(dx, want, "{name}: dx == 2x");
        eprintln!("{name}: y == x and dx == 2x exactly (n = {n})");
    }
}

/// Forward rules: the tangent goes through the same collective; batch width 3; a `Const` input
/// contributes zeros; a `Const` output still takes part. Reverse rules accumulate into preloaded
/// shadows (`+=`, not `=`) and zero the output's.
#[test]
#[ignore = "needs a CUDA GPU and NCCL"]
fn single_rank_forward_batches_and_const_arguments() {
    let s = gpu();
    let comm = single_rank(&s);
    let n = 257;
    let x = dev(&s, &random_vec::<f64>(n, 2));
    let mut y = zeros(&s, n);
    let vs: Vec<Vec<f64>> = (0..3).map(|k| random_vec::<f64>(n, 10 + k)).collect();
    let mut dxs: Vec<CudaSlice<f64>> = vs.iter().map(|v| dev(&s, v)).collect();
    let mut dys: Vec<CudaSlice<f64>> = (0..3).map(|_| dev(&s, &vec![9.0; n])).collect();
    {
        let [a, b, c] = &mut dxs[..] else {
            unreachable!()
        };
        let [d, e, f] = &mut dys[..] else {
            unreachable!()
        };
        sum_all_rule(&comm)
            .forward(
                Duplicated::batch(&mut y, [d, e, f]),
                Duplicated::batch(&x, [a, b, c]),
            )
            .unwrap();
    }
    assert_eq!(host(&y), host(&x), "primal");
    for k in 0..3 {
        assert_eq!(host(&dys[k]), vs[k], "tangent lane {k}");
    }
    // Const input: the output's tangent is zero (zeros went through NCCL).
    gather_rule(&comm)
        .forward(Duplicated::new(&mut y, &mut dys[0]), Const(&x))
        .unwrap();
    assert!(
        host(&dys[0]).iter().all(|v| *v == 0.0),
        "Const input → zero tangent"
    );
    // Const output: the collective still runs (dropped into scratch), the input is untouched.
    gather_rule(&comm)
        .forward(Const(&mut y), Duplicated::new(&x, &mut dxs[0]))
        .unwrap();
    assert_eq!(host(&dxs[0]), vs[0]);

    // Reverse into preloaded shadows, width 3: dx_k += dy_k, dy_k ← 0.
    let pre: Vec<Vec<f64>> = (0..3).map(|k| random_vec::<f64>(n, 20 + k)).collect();
    let seeds: Vec<Vec<f64>> = (0..3).map(|k| random_vec::<f64>(n, 30 + k)).collect();
    let mut dxs: Vec<CudaSlice<f64>> = pre.iter().map(|v| dev(&s, v)).collect();
    let mut dys: Vec<CudaSlice<f64>> = seeds.iter().map(|v| dev(&s, v)).collect();
    {
        let [a, b, c] = &mut dxs[..] else {
            unreachable!()
        };
        let [d, e, f] = &mut dys[..] else {
            unreachable!()
        };
        let tape = scatter_rule(&comm)
            .augmented_primal(
                Duplicated::batch(&mut y, [&mut *d, &mut *e, &mut *f]),
                Duplicated::batch(&x, [&mut *a, &mut *b, &mut *c]),
            )
            .unwrap();
        scatter_rule(&comm)
            .reverse(
                tape,
                Duplicated::batch(&mut y, [d, e, f]),
                Duplicated::batch(&x, [a, b, c]),
            )
            .unwrap();
    }
    for k in 0..3 {
        let want: Vec<f64> = pre[k].iter().zip(&seeds[k]).map(|(a, b)| a + b).collect();
        assert_eq!(host(&dxs[k]), want, "lane {k}: dx += dy");
        assert!(host(&dys[k]).iter().all(|v| *v == 0.0), "lane {k}: dy ← 0");
    }
    // Const input in reverse: the output's cotangent is zeroed, nothing else.
    let tape = bcast_rule(&comm, 0)
        .augmented_primal(Duplicated::new(&mut y, &mut dys[1]), Const(&x))
        .unwrap();
    let mut dy = dev(&s, &seeds[1]);
    bcast_rule(&comm, 0)
        .reverse(tape, Duplicated::new(&mut y, &mut dy), Const(&x))
        .unwrap();
    assert!(host(&dy).iter().all(|v| *v == 0.0));
    // Const output in reverse: zeros come back; dx unchanged.
    let tape = sum_all_rule(&comm)
        .augmented_primal(Const(&mut y), Duplicated::new(&x, &mut dxs[2]))
        .unwrap();
    let before = host(&dxs[2]);
    sum_all_rule(&comm)
        .reverse(tape, Const(&mut y), Duplicated::new(&x, &mut dxs[2]))
        .unwrap();
    assert_eq!(host(&dxs[2]), before);
}

/// A separate `send` and `recv` to oneself can only meet inside an NCCL group; their forward rules
/// do no local work after the NCCL calls, so they may be grouped: y = x, dy = dx.
#[test]
#[ignore = "needs a CUDA GPU and NCCL"]
fn single_rank_send_and_recv_forward_in_one_group() {
    let s = gpu();
    let comm = single_rank(&s);
    let v = random_vec::<f64>(64, 3);
    let w = random_vec::<f64>(64, 4);
    let (x, mut dx) = (dev(&s, &v), dev(&s, &w));
    let (mut y, mut dy) = (zeros(&s, 64), zeros(&s, 64));
    rules_runtime::cudarc::nccl::group_start().unwrap();
    let sent = send_to_rule(&comm, 0).forward(Duplicated::new(&x, &mut dx));
    let received = recv_from_rule(&comm, 0).forward(Duplicated::new(&mut y, &mut dy));
    rules_runtime::cudarc::nccl::group_end().unwrap();
    sent.unwrap();
    received.unwrap();
    assert_eq!((host(&y), host(&dy)), (v, w));
}

/// The dot-product test through NCCL, for every collective (one rank): ⟨J v, w⟩ = ⟨v, Jᵀ w⟩
/// with `J v` from the forward rule and `Jᵀ w` from the reverse rule, exactly.
#[test]
#[ignore = "needs a CUDA GPU and NCCL"]
fn single_rank_adjoint_checks() {
    let s = gpu();
    let comm = single_rank(&s);
    let n = 100;
    let x = dev(&s, &random_vec::<f64>(n, 5));
    let mut y = zeros(&s, n);
    for kind in [
        "broadcast",
        "reduce",
        "all_gather",
        "reduce_scatter",
        "all_reduce",
        "send_recv",
    ] {
        let v = random_vec::<f64>(n, 6);
        let w = random_vec::<f64>(n, 7);
        let (mut dv, mut jv) = (dev(&s, &v), zeros(&s, n));
        let (mut jtw, mut dw) = (zeros(&s, n), dev(&s, &w));
        let c = &comm;
        match kind {
            "broadcast" => {
                bcast_rule(c, 0)
                    .forward(
                        Duplicated::new(&mut y, &mut jv),
                        Duplicated::new(&x, &mut dv),
                    )
                    .unwrap();
                let t = bcast_rule(c, 0)
                    .augmented_primal(
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
                bcast_rule(c, 0)
                    .reverse(
                        t,
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
            }
            "reduce" => {
                reduce_to_rule(c, 0)
                    .forward(
                        Duplicated::new(&mut y, &mut jv),
                        Duplicated::new(&x, &mut dv),
                    )
                    .unwrap();
                let t = reduce_to_rule(c, 0)
                    .augmented_primal(
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
                reduce_to_rule(c, 0)
                    .reverse(
                        t,
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
            }
            "all_gather" => {
                gather_rule(c)
                    .forward(
                        Duplicated::new(&mut y, &mut jv),
                        Duplicated::new(&x, &mut dv),
                    )
                    .unwrap();
                let t = gather_rule(c)
                    .augmented_primal(
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
                gather_rule(c)
                    .reverse(
                        t,
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
            }
            "reduce_scatter" => {
                scatter_rule(c)
                    .forward(
                        Duplicated::new(&mut y, &mut jv),
                        Duplicated::new(&x, &mut dv),
                    )
                    .unwrap();
                let t = scatter_rule(c)
                    .augmented_primal(
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
                scatter_rule(c)
                    .reverse(
                        t,
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
            }
            "all_reduce" => {
                sum_all_rule(c)
                    .forward(
                        Duplicated::new(&mut y, &mut jv),
                        Duplicated::new(&x, &mut dv),
                    )
                    .unwrap();
                let t = sum_all_rule(c)
                    .augmented_primal(
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
                sum_all_rule(c)
                    .reverse(
                        t,
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
            }
            _ => {
                shift_rule(c, 0, 0)
                    .forward(
                        Duplicated::new(&mut y, &mut jv),
                        Duplicated::new(&x, &mut dv),
                    )
                    .unwrap();
                let t = shift_rule(c, 0, 0)
                    .augmented_primal(
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
                shift_rule(c, 0, 0)
                    .reverse(
                        t,
                        Duplicated::new(&mut y, &mut dw),
                        Duplicated::new(&x, &mut jtw),
                    )
                    .unwrap();
            }
        }
        let (lhs, rhs) = (dot(&host(&jv), &w), dot(&v, &host(&jtw)));
        assert_eq!(lhs, rhs, "{kind}: <Jv, w> = <v, J^T w>");
        eprintln!("{kind}: <Jv, w> = <v, J^T w> = {lhs}");
    }
}

/// Every argument error is typed and raised before anything moves (the primal did not run).
#[test]
#[ignore = "needs a CUDA GPU and NCCL"]
fn single_rank_errors_are_typed_and_change_nothing() {
    let s = gpu();
    let comm = single_rank(&s);
    let x = dev(&s, &[1.0, 2.0, 3.0]);
    let mut y = dev(&s, &[7.0; 3]);
    let e = bcast_rule(&comm, 1)
        .forward(Const(&mut y), Const(&x))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidRank {
                rank: 1,
                world_size: 1,
                ..
            }
        ),
        "{e}"
    );
    let mut long = dev(&s, &[7.0; 4]);
    let e = gather_rule(&comm)
        .forward(Const(&mut long), Const(&x))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 3,
                found: 4,
                ..
            }
        ),
        "{e}"
    );
    let mut dy = zeros(&s, 2);
    let e = sum_all_rule(&comm)
        .forward(Duplicated::new(&mut y, &mut dy), Const(&x))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 3,
                found: 2,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(host(&y), [7.0; 3], "nothing ran");
    // A buffer of another context (a second context on the same device) is refused.
    let other = CudaContext::new_non_primary(0, 0)
        .unwrap()
        .new_stream()
        .unwrap();
    let mut foreign = other.alloc_zeros::<f64>(3).unwrap();
    let e = sum_all_rule(&comm)
        .forward(Const(&mut foreign), Const(&x))
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    // A tape from another call.
    let mut dx = zeros(&s, 3);
    let tape = sum_all_rule(&comm)
        .augmented_primal(Const(&mut y), Duplicated::new(&x, &mut dx))
        .unwrap();
    let e = scatter_rule(&comm)
        .reverse(tape, Const(&mut y), Duplicated::new(&x, &mut dx))
        .unwrap_err();
    assert!(matches!(e, Error::TapeMismatch(_)), "{e}");
    eprintln!("typed errors: InvalidRank, LengthMismatch, ContextMismatch, TapeMismatch");
}

/// The scratch memory of the collective rules does not grow with the streams it served:
/// 200 single-rank communicators, each on a fresh stream, each running one reverse rule
/// (64 MiB of scratch: the cotangent received, and zeros for the `Const` output), then dropped
/// with their streams, leave the device's free memory within 1% of where it started.
#[test]
#[ignore = "needs a CUDA GPU and NCCL"]
fn nccl_scratch_is_released_with_its_stream() {
    let s = gpu();
    let ctx = s.context().clone();
    let n = 4 << 20; // 32 MiB of f64
    let free = || {
        ctx.synchronize().unwrap();
        ctx.bind_to_thread().unwrap();
        rules_runtime::cudarc::driver::result::mem_get_info()
            .unwrap()
            .0
    };
    let reverse = |comm: &Comm, st: &Arc<CudaStream>| {
        let (x, mut dx, mut y) = (zeros(st, n), zeros(st, n), zeros(st, n));
        let tape = sum_all_rule(comm)
            .augmented_primal(Const(&mut y), Duplicated::new(&x, &mut dx))
            .unwrap();
        sum_all_rule(comm)
            .reverse(tape, Const(&mut y), Duplicated::new(&x, &mut dx))
            .unwrap();
        st.synchronize().unwrap();
    };
    // Warm up (NCCL's and the runtime's one-time set-up), on `s` and on a fresh stream.
    let kept = single_rank(&s);
    reverse(&kept, &s);
    {
        let st = ctx.new_stream().unwrap();
        let comm = single_rank(&st);
        reverse(&comm, &st);
    }
    reverse(&kept, &s);
    let start = free();
    for _ in 0..200 {
        let st = ctx.new_stream().unwrap();
        let comm = single_rank(&st);
        reverse(&comm, &st);
        drop(comm);
        drop(st);
    }
    // Scratch of streams that are gone is released on the next call of a collective rule.
    reverse(&kept, &s);
    let end = free();
    let mib = |b: usize| b as f64 / (1u64 << 20) as f64;
    eprintln!(
        "free device memory: {:.0} MiB before 200 communicators, {:.0} MiB after",
        mib(start),
        mib(end)
    );
    // One-sided: free memory may also rise, when NCCL releases what the warm-up's communicator
    // held (after `start`, on its own schedule); scratch that outlived its streams would lower it.
    assert!(
        end + start / 100 >= start,
        "free device memory went from {:.0} MiB to {:.0} MiB: scratch outlived its streams",
        mib(start),
        mib(end)
    );
}

// ---- One GPU: peer copies between two contexts of device 0 -------------------------------------

/// Two contexts on device 0 (the primary one and a non-primary one): buffers on different
/// contexts, as between two devices. The copy rule's reverse moves `d_dst` (context B) into
/// `d_src` (context A) through staging on A: `dx += dy`, `dy ← 0`, exactly.
#[test]
#[ignore = "needs a CUDA GPU"]
fn peer_copy_between_two_contexts_of_device_0() {
    let sa = gpu();
    let sb = CudaContext::new_non_primary(0, 0)
        .unwrap()
        .new_stream()
        .unwrap();
    assert_ne!(sa.context().cu_ctx(), sb.context().cu_ctx());
    let n = 1 << 20;
    let v = random_vec::<f64>(n, 8);
    let (x, mut dx) = (dev(&sa, &v), dev(&sa, &vec![0.5; n]));
    let (mut y, mut dy) = (zeros(&sb, n), zeros(&sb, n));
    // Forward: the tangent goes through the same peer copy.
    let t = random_vec::<f64>(n, 9);
    let mut dt = dev(&sa, &t);
    peer_copy_rule(&sb)
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dt),
        )
        .unwrap();
    assert_eq!((host(&y), host(&dy)), (v.clone(), t));
    // Reverse on the copy's stream (context B): staged into context A.
    let tape = peer_copy_rule(&sb)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    let seed = random_vec::<f64>(n, 10);
    dy = dev(&sb, &seed);
    peer_copy_rule(&sb)
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    let want: Vec<f64> = seed.iter().map(|a| a + 0.5).collect();
    assert_eq!(host(&dx), want, "dx += dy across contexts");
    assert!(
        host(&dy).iter().all(|a| *a == 0.0),
        "dy ← 0 on its own context"
    );
    // A Const source: the destination's tangent is zeroed on its context.
    dy = dev(&sb, &seed);
    peer_copy_rule(&sb)
        .forward(Duplicated::new(&mut y, &mut dy), Const(&x))
        .unwrap();
    assert!(host(&dy).iter().all(|a| *a == 0.0));
    eprintln!("peer copy between two contexts: forward, reverse (staged), Const source: exact");
}

/// The runtime's context-aware operations from either side: the copy's stream on the source's
/// context, or on the destination's; one operand routed, or both staged; many calls reuse the
/// staging (the stream order keeps them apart).
#[test]
#[ignore = "needs a CUDA GPU"]
fn peer_accumulate_from_either_context_and_repeatedly() {
    let sa = gpu();
    let sb = CudaContext::new_non_primary(0, 0)
        .unwrap()
        .new_stream()
        .unwrap();
    let n = 4097;
    let mut acc = dev(&sa, &vec![1.0; n]);
    for round in 0..10 {
        let on = if round % 2 == 0 { &sa } else { &sb };
        let mut src = dev(&sb, &vec![0.25; n]);
        rules_runtime::accumulate_and_zero(On::stream(on), &mut acc, &mut src).unwrap();
        assert!(host(&src).iter().all(|a| *a == 0.0), "round {round}");
    }
    assert!(host(&acc).iter().all(|a| *a == 3.5), "1 + 10 · 0.25");
    // One operand on another context than the stream: routed there and joined back.
    let mut other = dev(&sb, &vec![2.0; n]);
    rules_runtime::zero(On::stream(&sa), &mut other).unwrap();
    assert!(host(&other).iter().all(|a| *a == 0.0));
    let mut h = vec![1.0; n];
    let mut d = dev(&sb, &vec![0.5; n]);
    rules_runtime::accumulate_and_zero(On::stream(&sa), &mut h[..], &mut d).unwrap();
    sa.synchronize().unwrap();
    assert!(h.iter().all(|a| *a == 1.5) && host(&d).iter().all(|a| *a == 0.0));
    // Peer access between two contexts of one device: allowed or a typed refusal, never a panic.
    match peer::enable_peer_access(sa.context(), sb.context()) {
        Ok(()) => eprintln!("peer access between two contexts of device 0: enabled"),
        Err(e @ (Error::NoPeerAccess { .. } | Error::Driver { .. })) => {
            eprintln!("peer access between two contexts of device 0: {e}")
        }
        Err(e) => panic!("unexpected: {e}"),
    }
}

#[test]
fn multi_gpu_suite_is_ignored_without_gpus_and_says_why() {
    // Not a GPU test: documents, and checks, how the suite behaves on this machine.
    match rules_runtime::cuda::stream(0) {
        Ok(_) => {
            let n = CudaContext::device_count().unwrap_or(0);
            let nccl = if nccl::nccl_available() {
                "NCCL found"
            } else {
                "NCCL missing"
            };
            eprintln!(
                "{n} GPU(s), {nccl}: run `--include-ignored`{}",
                if n < 2 {
                    " --skip two_gpus (the two_gpus_* tests need 2 GPUs)"
                } else {
                    ""
                }
            );
        }
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            eprintln!("multi-GPU suite SKIPPED (reported as ignored): {e}");
        }
        Err(e) => panic!("unexpected error probing for a GPU: {e}"),
    }
}

// ---- Two GPUs: one thread and one communicator per GPU -----------------------------------------

fn two_gpus() -> usize {
    let n = rules_runtime::cuda::context(0)
        .ok()
        .and_then(|_| CudaContext::device_count().ok())
        .unwrap_or(0) as usize;
    assert!(
        n >= 2,
        "this test needs 2 CUDA GPUs, and this machine has {n}: on one GPU run `--skip two_gpus`"
    );
    2
}

/// Runs `f(rank, stream, comm)` on every GPU, one thread each, and returns the results by rank.
fn on_each_gpu<R: Send>(p: usize, f: impl Fn(usize, Arc<CudaStream>, Comm) -> R + Sync) -> Vec<R> {
    let id = nccl::unique_id().unwrap();
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = (0..p)
            .map(|r| {
                scope.spawn(move || {
                    let s = rules_runtime::cuda::stream(r).unwrap();
                    let comm = nccl::comm_from_rank(s.clone(), r, p, id).unwrap();
                    f(r, s, comm)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The seed's round trip through a broadcast on 2 GPUs: y = x of the root on every rank;
/// f = Σ_ranks Σ y², so dx = 2·p·x on the root and nothing elsewhere.
#[test]
#[ignore = "needs 2 CUDA GPUs and NCCL"]
fn two_gpus_broadcast_seed_round_trip() {
    let p = two_gpus();
    let x0 = random_vec::<f64>(1000, 11);
    let out = on_each_gpu(p, |r, s, comm| {
        let x = if r == 0 {
            x0.clone()
        } else {
            vec![0.0; x0.len()]
        };
        let c = &comm;
        seed_round_trip(
            &s,
            &x,
            x.len(),
            &|x, dx, y, dy| {
                bcast_rule(c, 0).augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            },
            &|t, x, dx, y, dy| {
                bcast_rule(c, 0).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            },
        )
    });
    for (r, (y, dx)) in out.iter().enumerate() {
        assert_eq!(*y, x0, "rank {r}: y = x of the root");
        let want = if r == 0 {
            scaled(&x0, 2.0 * p as f64)
        } else {
            vec![0.0; x0.len()]
        };
        assert_eq!(*dx, want, "rank {r}: dx");
    }
}

/// The seed's round trip through an all-gather on 2 GPUs: dx = 2·p·x on every rank.
#[test]
#[ignore = "needs 2 CUDA GPUs and NCCL"]
fn two_gpus_all_gather_seed_round_trip() {
    let p = two_gpus();
    let xs: Vec<Vec<f64>> = (0..p)
        .map(|r| random_vec::<f64>(1000, 12 + r as u64))
        .collect();
    let out = on_each_gpu(p, |r, s, comm| {
        let c = &comm;
        seed_round_trip(
            &s,
            &xs[r],
            p * xs[r].len(),
            &|x, dx, y, dy| {
                gather_rule(c).augmented_primal(Duplicated::new(y, dy), Duplicated::new(x, dx))
            },
            &|t, x, dx, y, dy| {
                gather_rule(c).reverse(t, Duplicated::new(y, dy), Duplicated::new(x, dx))
            },
        )
    });
    for (r, (y, dx)) in out.iter().enumerate() {
        assert_eq!(*y, xs.concat(), "rank {r}: y");
        assert_eq!(*dx, scaled(&xs[r], 2.0 * p as f64), "rank {r}: dx");
    }
}

/// The dot-product test across ranks for every collective: Σ_r ⟨J v, w⟩_r = Σ_r ⟨v, Jᵀ w⟩_r, and
/// `J v` equals the host model of the collective.
#[test]
#[ignore = "needs 2 CUDA GPUs and NCCL"]
fn two_gpus_adjoint_checks_across_ranks() {
    let p = two_gpus();
    let n = 96;
    for kind in [
        "broadcast",
        "reduce",
        "all_gather",
        "reduce_scatter",
        "all_reduce",
        "send_recv",
    ] {
        let op = |r: usize| match kind {
            "broadcast" => Op::Broadcast { root: 1 },
            "reduce" => Op::Reduce { root: 0 },
            "all_gather" => Op::AllGather,
            "reduce_scatter" => Op::ReduceScatter,
            "all_reduce" => Op::AllReduce,
            _ => Op::SendRecv {
                to: (r + 1) % p,
                from: (r + p - 1) % p,
            },
        };
        // Full buffers on every rank (a rank that does not read `x` or write `y` ignores them).
        let full = |r: usize| match op(r) {
            Op::AllGather => (n, p * n),
            Op::ReduceScatter => (p * n, n),
            _ => (n, n),
        };
        let vs: Vec<Vec<f64>> = (0..p)
            .map(|r| random_vec::<f64>(full(r).0, 40 + r as u64))
            .collect();
        let ws: Vec<Vec<f64>> = (0..p)
            .map(|r| random_vec::<f64>(full(r).1, 50 + r as u64))
            .collect();
        let out = on_each_gpu(p, |r, s, comm| {
            let (lx, ly) = full(r);
            let x = dev(&s, &random_vec::<f64>(lx, 60 + r as u64));
            let mut y = zeros(&s, ly);
            let (mut dv, mut jv) = (dev(&s, &vs[r]), zeros(&s, ly));
            let (mut jtw, mut dw) = (zeros(&s, lx), dev(&s, &ws[r]));
            let c = &comm;
            let (to, from) = ((r + 1) % p, (r + p - 1) % p);
            macro_rules! both {
                ($rule:ident $(, $a:expr)*) => {{
                    let mut rule = $rule(c $(, $a)*);
                    rule.forward(Duplicated::new(&mut y, &mut jv), Duplicated::new(&x, &mut dv)).unwrap();
                    let t = rule.augmented_primal(Duplicated::new(&mut y, &mut dw), Duplicated::new(&x, &mut jtw)).unwrap();
                    rule.reverse(t, Duplicated::new(&mut y, &mut dw), Duplicated::new(&x, &mut jtw)).unwrap();
                }};
            }
            match kind {
                "broadcast" => both!(bcast_rule, 1),
                "reduce" => both!(reduce_to_rule, 0),
                "all_gather" => both!(gather_rule),
                "reduce_scatter" => both!(scatter_rule),
                "all_reduce" => both!(sum_all_rule),
                _ => both!(shift_rule, to, from),
            }
            (host(&jv), host(&jtw))
        });
        // The model, on the parts each rank reads and writes.
        let used_v: Vec<Vec<f64>> = (0..p)
            .map(|r| vs[r][..model::lens(op(r), r, p, n).unwrap().0].to_vec())
            .collect();
        let ops: Vec<Op> = (0..p).map(op).collect();
        let want = model::apply(&ops, &used_v).unwrap();
        let (mut lhs, mut rhs) = (0.0, 0.0);
        for r in 0..p {
            let ly = model::lens(op(r), r, p, n).unwrap().1;
            assert_eq!(
                out[r].0[..ly],
                want[r][..],
                "{kind}: J v on rank {r} matches the model"
            );
            lhs += dot(&out[r].0[..ly], &ws[r][..ly]);
            rhs += dot(&vs[r], &out[r].1);
        }
        assert_eq!(lhs, rhs, "{kind}: sum over ranks of <Jv, w> = <v, J^T w>");
        eprintln!("{kind} on {p} GPUs: <Jv, w> = <v, J^T w> = {lhs}");
    }
}

/// A `send` rule on rank 0 and a `recv` rule on rank 1: forward y₁ = x₀ and dy₁ = dx₀; reverse
/// dx₀ += dy₁ and dy₁ ← 0.
#[test]
#[ignore = "needs 2 CUDA GPUs and NCCL"]
fn two_gpus_send_and_recv_rules() {
    let p = two_gpus();
    let v = random_vec::<f64>(500, 70);
    let t = random_vec::<f64>(500, 71);
    let seed = random_vec::<f64>(500, 72);
    let out = on_each_gpu(p, |r, s, comm| {
        if r == 0 {
            let x = dev(&s, &v);
            let mut dx = dev(&s, &t);
            send_to_rule(&comm, 1)
                .forward(Duplicated::new(&x, &mut dx))
                .unwrap();
            let mut g = zeros(&s, 500);
            let tape = send_to_rule(&comm, 1)
                .augmented_primal(Duplicated::new(&x, &mut g))
                .unwrap();
            send_to_rule(&comm, 1)
                .reverse(tape, Duplicated::new(&x, &mut g))
                .unwrap();
            (host(&g), Vec::new())
        } else if r == 1 {
            let (mut y, mut dy) = (zeros(&s, 500), zeros(&s, 500));
            recv_from_rule(&comm, 0)
                .forward(Duplicated::new(&mut y, &mut dy))
                .unwrap();
            let forward = [host(&y), host(&dy)].concat();
            let tape = recv_from_rule(&comm, 0)
                .augmented_primal(Duplicated::new(&mut y, &mut dy))
                .unwrap();
            dy = dev(&s, &seed);
            recv_from_rule(&comm, 0)
                .reverse(tape, Duplicated::new(&mut y, &mut dy))
                .unwrap();
            assert!(host(&dy).iter().all(|a| *a == 0.0), "dy ← 0");
            (Vec::new(), forward)
        } else {
            (Vec::new(), Vec::new())
        }
    });
    assert_eq!(out[1].1, [v.clone(), t].concat(), "y₁ = x₀, dy₁ = dx₀");
    assert_eq!(out[0].0, seed, "dx₀ += dy₁");
}

/// A peer copy from device 0 to device 1 through the copy rule (cudarc's peer path) and through a
/// raw-pointer rule: the reverse accumulates into device 0, exactly, without and with peer access.
#[test]
#[ignore = "needs 2 CUDA GPUs and NCCL"]
fn two_gpus_peer_copy_across_devices() {
    two_gpus();
    let s0 = rules_runtime::cuda::stream(0).unwrap();
    let s1 = rules_runtime::cuda::stream(1).unwrap();
    let n = 1 << 20;
    let v = random_vec::<f64>(n, 80);
    let seed = random_vec::<f64>(n, 81);
    for with_peer_access in [false, true] {
        if with_peer_access {
            match peer::enable_peer_access(s1.context(), s0.context()) {
                Ok(()) => {}
                Err(Error::NoPeerAccess { .. }) => {
                    eprintln!(
                        "devices 1 → 0 have no peer access: the staged path was tested alone"
                    );
                    continue;
                }
                Err(e) => panic!("{e}"),
            }
        }
        let (x, mut dx) = (dev(&s0, &v), zeros(&s0, n));
        let (mut y, mut dy) = (zeros(&s1, n), zeros(&s1, n));
        let tape = peer_copy_rule(&s1)
            .augmented_primal(
                Duplicated::new(&mut y, &mut dy),
                Duplicated::new(&x, &mut dx),
            )
            .unwrap();
        assert_eq!(host(&y), v);
        dy = dev(&s1, &seed);
        peer_copy_rule(&s1)
            .reverse(
                tape,
                Duplicated::new(&mut y, &mut dy),
                Duplicated::new(&x, &mut dx),
            )
            .unwrap();
        assert_eq!(host(&dx), seed, "dx (device 0) += dy (device 1)");
        assert!(host(&dy).iter().all(|a| *a == 0.0));
        // Raw device pointers on two devices: the reverse finds each pointer's device.
        let (mut dx, mut dy) = (zeros(&s0, n), dev(&s1, &seed));
        let mut y = zeros(&s1, n);
        use rules_runtime::cudarc::driver::{DevicePtr, DevicePtrMut};
        let (px, _g1) = x.device_ptr(&s0);
        let (pdx, _g2) = dx.device_ptr_mut(&s0);
        let (py, _g3) = y.device_ptr_mut(&s1);
        let (pdy, _g4) = dy.device_ptr_mut(&s1);
        s0.synchronize().unwrap();
        let (px, pdx, py, pdy) = (
            px as *const f64,
            pdx as *mut f64,
            py as *mut f64,
            pdy as *mut f64,
        );
        unsafe {
            let tape = raw_copy_rule(&s1, n)
                .augmented_primal(Duplicated::new(py, pdy), Duplicated::new(px, pdx))
                .unwrap();
            raw_copy_rule(&s1, n)
                .reverse(tape, Duplicated::new(py, pdy), Duplicated::new(px, pdx))
                .unwrap();
        }
        s1.synchronize().unwrap();
        s0.synchronize().unwrap();
        drop((_g1, _g2, _g3, _g4));
        assert_eq!(
            host(&dx),
            seed,
            "raw pointers: dx (device 0) += dy (device 1)"
        );
        assert!(host(&dy).iter().all(|a| *a == 0.0));
        eprintln!("peer copy 0 → 1 (peer access: {with_peer_access}): exact");
    }
}
