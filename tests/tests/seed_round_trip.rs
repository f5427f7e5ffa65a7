//! The seed's example on host memory: `f(x) = sum(abs2, to_host(to_device(x)))`, with both copies
//! user-written primitives annotated with `#[derivative_rule(copy)]`. The gradient is `2x`,
//! exactly, in reverse mode and in forward mode, for f32 and f64, at widths 1 and 3.

macro_rules! seed_round_trip {
    ($m:ident, $t:ty) => {
        mod $m {
            use rules_runtime::{Const, CopyRule, Duplicated, derivative_rule};

            /// "Upload": on host memory, a copy into another host buffer.
            #[derivative_rule(copy)]
            fn to_device(#[dst] dst: &mut [$t], #[src] src: &[$t]) {
                dst.copy_from_slice(src);
            }

            /// "Download": the copy back.
            #[derivative_rule(copy)]
            fn to_host(#[dst] dst: &mut [$t], #[src] src: &[$t]) {
                dst.copy_from_slice(src);
            }

            const X: [$t; 5] = [1.0, -2.0, 3.5, 0.25, -7.0];

            /// `sum(abs2, y)`.
            fn f(y: &[$t]) -> $t {
                y.iter().map(|v| v * v).sum()
            }

            #[test]
            fn reverse_gives_2x_exactly() {
                let x = X;
                let n = x.len();
                let mut dx = [0.0 as $t; 5];
                let (mut d, mut dd) = (vec![0.0 as $t; n], vec![0.0 as $t; n]);
                let (mut h, mut dh) = (vec![0.0 as $t; n], vec![0.0 as $t; n]);
                // Forward sweep: the augmented primals run the copies and keep their tapes.
                let t1 = to_device_rule()
                    .augmented_primal(
                        Duplicated::new(&mut d[..], &mut dd[..]),
                        Duplicated::new(&x[..], &mut dx[..]),
                    )
                    .unwrap();
                let t2 = to_host_rule()
                    .augmented_primal(
                        Duplicated::new(&mut h[..], &mut dh[..]),
                        Duplicated::new(&d[..], &mut dd[..]),
                    )
                    .unwrap();
                assert_eq!(h, x);
                assert_eq!(f(&h), 1.0 + 4.0 + 12.25 + 0.0625 + 49.0);
                // The cotangent of sum(abs2, h) is 2h.
                for (g, v) in dh.iter_mut().zip(&h) {
                    *g += 2.0 * v;
                }
                // Reverse sweep, in the opposite order.
                to_host_rule()
                    .reverse(
                        t2,
                        Duplicated::new(&mut h[..], &mut dh[..]),
                        Duplicated::new(&d[..], &mut dd[..]),
                    )
                    .unwrap();
                assert_eq!(dh, [0.0; 5], "the output cotangent is consumed");
                assert_eq!(
                    dd,
                    [2.0, -4.0, 7.0, 0.5, -14.0],
                    "it moved to the intermediate"
                );
                to_device_rule()
                    .reverse(
                        t1,
                        Duplicated::new(&mut d[..], &mut dd[..]),
                        Duplicated::new(&x[..], &mut dx[..]),
                    )
                    .unwrap();
                assert_eq!(dx, [2.0, -4.0, 7.0, 0.5, -14.0], "dx == 2x, not 3x, not 0");
                assert_eq!(dd, [0.0; 5]);
            }

            #[test]
            fn reverse_accumulates_into_an_existing_gradient() {
                // dx already holds a gradient from elsewhere: the reverse adds to it.
                let x = X;
                let mut dx: [$t; 5] = [10.0, 20.0, 30.0, 40.0, 50.0];
                let (mut d, mut dd) = ([0.0 as $t; 5], [0.0 as $t; 5]);
                let (mut h, mut dh) = ([0.0 as $t; 5], [0.0 as $t; 5]);
                let t1 = to_device_rule()
                    .augmented_primal(
                        Duplicated::new(&mut d[..], &mut dd[..]),
                        Duplicated::new(&x[..], &mut dx[..]),
                    )
                    .unwrap();
                let t2 = to_host_rule()
                    .augmented_primal(
                        Duplicated::new(&mut h[..], &mut dh[..]),
                        Duplicated::new(&d[..], &mut dd[..]),
                    )
                    .unwrap();
                dh = h.map(|v| 2.0 * v);
                to_host_rule()
                    .reverse(
                        t2,
                        Duplicated::new(&mut h[..], &mut dh[..]),
                        Duplicated::new(&d[..], &mut dd[..]),
                    )
                    .unwrap();
                to_device_rule()
                    .reverse(
                        t1,
                        Duplicated::new(&mut d[..], &mut dd[..]),
                        Duplicated::new(&x[..], &mut dx[..]),
                    )
                    .unwrap();
                assert_eq!(dx, [12.0, 16.0, 37.0, 40.5, 36.0]);
            }

            #[test]
            fn reverse_width_3_gives_three_gradients() {
                // Three cotangent seeds at once: for sum(abs2, y) → 2x; for Σ i·yᵢ → [0, 1, 2, 3, 4];
                // for -½·sum(abs2, y) → -x.
                let x = X;
                let n = x.len();
                let mut dx = rules_tests::copies::<_, 3>(&vec![0.0 as $t; n]);
                let mut d = vec![0.0 as $t; n];
                let mut dd = rules_tests::copies::<_, 3>(&vec![0.0 as $t; n]);
                let mut h = vec![0.0 as $t; n];
                let mut dh = rules_tests::copies::<_, 3>(&vec![0.0 as $t; n]);
                let t1 = to_device_rule()
                    .augmented_primal(
                        Duplicated::batch(&mut d[..], rules_tests::lanes(&mut dd)),
                        Duplicated::batch(&x[..], rules_tests::lanes(&mut dx)),
                    )
                    .unwrap();
                let t2 = to_host_rule()
                    .augmented_primal(
                        Duplicated::batch(&mut h[..], rules_tests::lanes(&mut dh)),
                        Duplicated::batch(&d[..], rules_tests::lanes(&mut dd)),
                    )
                    .unwrap();
                assert_eq!(h, x);
                for i in 0..n {
                    dh[0][i] = 2.0 * h[i];
                    dh[1][i] = i as $t;
                    dh[2][i] = -h[i];
                }
                to_host_rule()
                    .reverse(
                        t2,
                        Duplicated::batch(&mut h[..], rules_tests::lanes(&mut dh)),
                        Duplicated::batch(&d[..], rules_tests::lanes(&mut dd)),
                    )
                    .unwrap();
                to_device_rule()
                    .reverse(
                        t1,
                        Duplicated::batch(&mut d[..], rules_tests::lanes(&mut dd)),
                        Duplicated::batch(&x[..], rules_tests::lanes(&mut dx)),
                    )
                    .unwrap();
                assert_eq!(dx[0], [2.0, -4.0, 7.0, 0.5, -14.0]);
                assert_eq!(dx[1], [0.0, 1.0, 2.0, 3.0, 4.0]);
                assert_eq!(dx[2], [-1.0, 2.0, -3.5, -0.25, 7.0]);
                assert!(dd.iter().chain(&dh).all(|s| s.iter().all(|&v| v == 0.0)));
            }

            /// Forward mode: pushes tangents `v` (one per lane) through both copies and returns the
            /// primal output and the tangents of `h`.
            fn push_forward<const W: usize>(
                x: &[$t],
                mut v: [Vec<$t>; W],
            ) -> (Vec<$t>, [Vec<$t>; W]) {
                let n = x.len();
                let mut d = vec![0.0 as $t; n];
                let mut dd = rules_tests::copies::<_, W>(&vec![0.0 as $t; n]);
                let mut h = vec![0.0 as $t; n];
                let mut dh = rules_tests::copies::<_, W>(&vec![f64::NAN as $t; n]); // overwritten, never read
                to_device_rule()
                    .forward(
                        Duplicated::batch(&mut d[..], rules_tests::lanes(&mut dd)),
                        Duplicated::batch(x, rules_tests::lanes(&mut v)),
                    )
                    .unwrap();
                to_host_rule()
                    .forward(
                        Duplicated::batch(&mut h[..], rules_tests::lanes(&mut dh)),
                        Duplicated::batch(&d[..], rules_tests::lanes(&mut dd)),
                    )
                    .unwrap();
                (h, dh)
            }

            /// The tangent of sum(abs2, h): Σ 2 hᵢ ḣᵢ.
            fn df(h: &[$t], dh: &[$t]) -> $t {
                h.iter().zip(dh).map(|(a, b)| 2.0 * a * b).sum()
            }

            fn e(i: usize, n: usize) -> Vec<$t> {
                (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect()
            }

            #[test]
            fn forward_gives_2x_exactly() {
                // Width 1, one basis direction at a time: the tangent of f along eᵢ is 2xᵢ.
                let x = X;
                let grad: Vec<$t> = (0..x.len())
                    .map(|i| {
                        let (h, dh) = push_forward(&x, [e(i, x.len())]);
                        assert_eq!(h, x);
                        assert_eq!(dh[0], e(i, x.len()));
                        df(&h, &dh[0])
                    })
                    .collect();
                assert_eq!(grad, [2.0, -4.0, 7.0, 0.5, -14.0]);
            }

            #[test]
            fn forward_width_3_gives_three_directional_derivatives() {
                // Three directions at once: e₀, e₄, and v = [1, 1, -1, 4, 0.5] (J v = v, f'(x) v = 2x·v).
                let x = X;
                let v = [1.0, 1.0, -1.0, 4.0, 0.5];
                let (h, dh) = push_forward(&x, [e(0, 5), e(4, 5), v.to_vec()]);
                assert_eq!(h, x);
                assert_eq!(dh[2], v, "J v == v for a round trip");
                let got = [df(&h, &dh[0]), df(&h, &dh[1]), df(&h, &dh[2])];
                assert_eq!(got, [2.0, -14.0, -14.0]); // 2·(1 − 2 − 3.5 + 1 − 3.5)
            }

            #[test]
            fn forward_with_const_source_has_zero_tangent() {
                // x is a constant: the tangent of f is 0, whatever the stale tangent buffers held.
                let x = X;
                let mut d = [0.0 as $t; 5];
                let mut dd: [$t; 5] = [9.0; 5];
                let mut h = [0.0 as $t; 5];
                let mut dh: [$t; 5] = [9.0; 5];
                to_device_rule()
                    .forward(Duplicated::new(&mut d[..], &mut dd[..]), Const(&x[..]))
                    .unwrap();
                to_host_rule()
                    .forward(
                        Duplicated::new(&mut h[..], &mut dh[..]),
                        Duplicated::new(&d[..], &mut dd[..]),
                    )
                    .unwrap();
                assert_eq!(h, x);
                assert_eq!(df(&h, &dh), 0.0);
                assert_eq!(dh, [0.0; 5]);
            }
        }
    };
}

seed_round_trip!(f32_round_trip, f32);
seed_round_trip!(f64_round_trip, f64);
