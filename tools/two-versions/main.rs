//! Runs the ready-made bridged copies of two versions of `rules-runtime` linked into this one
//! binary (`rr0`, the repository's; `rr1`, the copy at the next version) and checks that each call
//! ran its own version's bridge: the values arrive, and only the called version's bridge counters
//! (`autodiff::calls`) and error slot (`autodiff::take_error`) move, each version having its own.
//! The copies are on pageable host memory (`AdPair::new_host`), which needs no GPU; the integer
//! copies need device memory (`AdData`), so they run only where a driver and a device are found.
//! Prints every check; exits with 1 if any disagreed.

use std::process::ExitCode;

/// Both versions' bridge runs: (primal, forward, augmented primal, reverse) of `rr0`, then of `rr1`.
fn runs() -> [[usize; 4]; 2] {
    let (a, b) = (rr0::autodiff::calls(), rr1::autodiff::calls());
    [
        [a.primal, a.forward, a.augmented_primal, a.reverse],
        [b.primal, b.forward, b.augmented_primal, b.reverse],
    ]
}

/// `memcpy_htod` then `memcpy_dtoh` of `x` through a pair of host slices of version `$rr`:
/// (the buffer the handle names, what came back).
macro_rules! round_trip {
    ($rr:ident, $x:expr) => {{
        let x = $x;
        let (mut buf, mut shadow) = ([Default::default(); 3], [Default::default(); 3]);
        let mut back = [Default::default(); 3];
        let mut pair = $rr::autodiff::AdPair::new_host(&mut buf[..], &mut shadow[..])
            .expect("a pair of host slices of one length");
        let (dev, _) = pair.split();
        $rr::autodiff::copies::memcpy_htod(dev, &x);
        $rr::autodiff::copies::memcpy_dtoh(&mut back, dev);
        drop(pair);
        (x, buf, back)
    }};
}

/// The integer copies of version `$rr` on device memory: `x` up into an `AdData`, then back.
macro_rules! data_round_trip {
    ($rr:ident, $x:expr) => {{
        let x: [i32; 3] = $x;
        let s = $rr::cuda::stream(0).expect("a stream on device 0");
        let mut buf = s
            .alloc_zeros::<i32>(3)
            .expect("3 integers of device memory");
        let mut back = [0i32; 3];
        {
            let data =
                $rr::autodiff::copies::AdData::new(&mut buf, &s).expect("the stream's context");
            $rr::autodiff::copies::memcpy_htod(data.handle(), &x);
            $rr::autodiff::copies::memcpy_dtoh(&mut back, data.handle());
        }
        (x, s.clone_dtoh(&buf).expect("the buffer back"), back)
    }};
}

struct Checks {
    failed: bool,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        println!("{} {what}", if ok { "ok  " } else { "FAIL" });
        self.failed |= !ok;
    }

    /// One call sequence of version `who` (0 or 1): its primal bridges ran `primals` times and
    /// nothing else of either version ran; neither version recorded an error.
    fn ran_alone(&mut self, before: [[usize; 4]; 2], who: usize, primals: usize, what: &str) {
        let after = runs();
        let mut expected = before;
        expected[who][0] += primals;
        self.check(
            after == expected,
            &format!("{what}: rr{who}'s primal bridges ran {primals} times, rr{}'s none (runs before {before:?}, after {after:?})", 1 - who),
        );
        let errors = (rr0::autodiff::take_error(), rr1::autodiff::take_error());
        self.check(
            errors.0.is_none() && errors.1.is_none(),
            &format!("{what}: no error recorded ({errors:?})"),
        );
    }
}

fn main() -> ExitCode {
    let mut c = Checks { failed: false };

    let before = runs();
    let (x, buf, back) = round_trip!(rr0, [1.5f32, 2.5, 3.5]);
    c.check(
        buf == x && back == x,
        "rr0 f32 htod + dtoh on host memory: the values arrive",
    );
    c.ran_alone(before, 0, 2, "rr0 f32");

    let before = runs();
    let (x, buf, back) = round_trip!(rr1, [10.0f32, 20.0, 30.0]);
    c.check(
        buf == x && back == x,
        "rr1 f32 htod + dtoh on host memory: the values arrive",
    );
    c.ran_alone(before, 1, 2, "rr1 f32");

    let before = runs();
    let (x, buf, back) = round_trip!(rr1, [0.25f64, 0.5, 0.75]);
    c.check(
        buf == x && back == x,
        "rr1 f64 htod + dtoh on host memory: the values arrive",
    );
    c.ran_alone(before, 1, 2, "rr1 f64");

    let before = runs();
    let (x, buf, back) = round_trip!(rr0, [-1.0f64, -2.0, -3.0]);
    c.check(
        buf == x && back == x,
        "rr0 f64 htod + dtoh on host memory: the values arrive",
    );
    c.ran_alone(before, 0, 2, "rr0 f64");

    // A refused call is recorded by the version whose bridge ran, in its own error slot.
    let before = runs();
    let (mut buf, mut shadow) = ([7.0f32; 3], [0.0f32; 3]);
    let mut pair = rr1::autodiff::AdPair::new_host(&mut buf[..], &mut shadow[..]).expect("a pair");
    rr1::autodiff::copies::memcpy_htod(pair.split().0, &[1.0f32, 2.0]);
    drop(pair);
    let after = runs();
    let (e0, e1) = (rr0::autodiff::take_error(), rr1::autodiff::take_error());
    let refused = e1
        .as_ref()
        .is_some_and(|(e, n)| *n == 1 && e.to_string().contains("memcpy_htod (primal)"));
    c.check(
        e0.is_none() && refused && buf == [7.0; 3],
        &format!("rr1 f32 htod of 2 into 3: refused by rr1 ({e1:?}), nothing in rr0's error slot ({e0:?}), nothing copied"),
    );
    c.check(
        after[0] == before[0] && after[1][0] == before[1][0] + 1,
        &format!("rr1's refused call ran rr1's primal bridge once, nothing of rr0 (before {before:?}, after {after:?})"),
    );

    if rr0::cuda::stream(0).is_ok() {
        let before = runs();
        let (x, buf, back) = data_round_trip!(rr0, [3, 1, 4]);
        c.check(
            buf == x && back == x,
            "rr0 i32 htod + dtoh on device memory: the values arrive",
        );
        c.ran_alone(before, 0, 2, "rr0 i32");
        let before = runs();
        let (x, buf, back) = data_round_trip!(rr1, [-5, 9, 2]);
        c.check(
            buf == x && back == x,
            "rr1 i32 htod + dtoh on device memory: the values arrive",
        );
        c.ran_alone(before, 1, 2, "rr1 i32");
    } else {
        println!("skip i32 copies: they need device memory (AdData), and no CUDA device was found");
    }

    if c.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
