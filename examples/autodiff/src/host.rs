//! The GPU-free cases (pageable host memory): `tools/autodiff.sh` runs them in CI.
use super::*;

/// The seed on host memory: to_host(to_device(x)) as two host copies.
#[autodiff_reverse(df_host, Duplicated, Active)]
fn f_host(x: &[f32; 3]) -> f32 {
    // Not zeros: a zeroing memset of a buffer only the opaque copies touch gives "Enzyme:
    // Cannot deduce type of memset" (nothing in `f_host` reads it as f32 before the copy).
    let mut m = [1.0f32; 3];
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut m, x, 3);
    host_copy_ad(&mut h, &m, 3);
    h.iter().map(|v| v * v).sum()
}

/// The seed on host memory again, in forward mode: Enzyme calls the bridges' forward rules
/// (`__enzyme_register_derivative_*`), which run the rule object's `forward`.
#[autodiff_forward(df_host_fwd, Dual, Dual)]
fn f_host_fwd(x: &[f32; 3]) -> f32 {
    let mut m = [1.0f32; 3];
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut m, x, 3);
    host_copy_ad(&mut h, &m, 3);
    h.iter().map(|v| v * v).sum()
}

/// The same in f64, through the generic rule's f64 bridge.
#[autodiff_reverse(df_host64, Duplicated, Active)]
fn f_host64(x: &[f64; 3]) -> f64 {
    let mut m = [1.0f64; 3];
    let mut h = [1.0f64; 3];
    host_copy_any_ad_f64(&mut m, x, 3);
    host_copy_any_ad_f64(&mut h, &m, 3);
    h.iter().map(|v| v * v).sum()
}

/// A misuse: four elements asked of three. The bridges refuse it (nothing is copied) and record
/// the error; `take_error` reports it.
#[autodiff_reverse(df_too_long, Duplicated, Active)]
fn f_too_long(x: &[f32; 3]) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 4);
    h.iter().map(|v| v * v).sum()
}

/// The pitched round trip on host memory: x's box -> rows 20 bytes apart -> h's box.
#[autodiff_reverse(df_host2d, Duplicated, Active)]
fn f_host2d(x: &[f32; 12]) -> f32 {
    let mut m = [1.0f32; 15];
    let mut h = [1.0f32; 12];
    host_copy2d_ad(&mut m, 20, x, PITCH_X, W, H);
    host_copy2d_ad(&mut h, PITCH_X, &m, 20, W, H);
    box_sum_sq(&h)
}

/// A memset inside: h = copy(x), then h[0] <- 0: f = x1² + x2², dx = [0, 2 x1, 2 x2].
#[autodiff_reverse(df_host_set, Duplicated, Active)]
fn f_host_set(x: &[f32; 3]) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 3);
    host_set_ad(&mut h, 0, 1, 0);
    h.iter().map(|v| v * v).sum()
}

/// A fill inside: h = copy(x), then h[1..3] <- a: f = x0² + 2a², dx = [2 x0, 0, 0], da = 4a.
/// `a` is an active float: Enzyme takes its derivative from the fill's reverse.
#[autodiff_reverse(df_host_fill, Duplicated, Active, Active)]
fn f_host_fill(x: &[f32; 3], a: f32) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 3);
    host_fill_ad(&mut h, 1, 2, a);
    h.iter().map(|v| v * v).sum()
}

/// The same in forward mode: the value's tangent reaches the filled elements.
#[autodiff_forward(df_host_fill_fwd, Dual, Dual, Dual)]
fn f_host_fill_fwd(x: &[f32; 3], a: f32) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 3);
    host_fill_ad(&mut h, 1, 2, a);
    h.iter().map(|v| v * v).sum()
}

/// The 2D round trip in forward mode.
#[autodiff_forward(df_host2d_fwd, Dual, Dual)]
fn f_host2d_fwd(x: &[f32; 12]) -> f32 {
    let mut m = [1.0f32; 15];
    let mut h = [1.0f32; 12];
    host_copy2d_ad(&mut m, 20, x, PITCH_X, W, H);
    host_copy2d_ad(&mut h, PITCH_X, &m, 20, W, H);
    box_sum_sq(&h)
}

/// A 3D round trip on host memory: x is 2 slices of 2 rows of 3 elements, rows 16 bytes
/// apart, slices 2 rows apart (16 elements, a padding column); through a buffer with rows 12
/// bytes apart and slices 3 rows apart (a padding row per slice) back into h, laid out as x.
#[autodiff_reverse(df_host3d, Duplicated, Active)]
fn f_host3d(x: &[f32; 16]) -> f32 {
    let mut m = [1.0f32; 18];
    let mut h = [1.0f32; 16];
    host_copy3d_ad(&mut m, 12, 3, x, 16, 2, 3, 2, 2);
    host_copy3d_ad(&mut h, 16, 2, &m, 12, 3, 3, 2, 2);
    let mut y = 0.0;
    for (i, v) in h.iter().enumerate() {
        if i % 4 < 3 {
            y += v * v;
        }
    }
    y
}

/// A 2D misuse: x's rows read 20 bytes apart, so the box reaches element 13 of 12. Refused
/// before any row is read.
#[autodiff_reverse(df_2d_too_far, Duplicated, Active)]
fn f_2d_too_far(x: &[f32; 12]) -> f32 {
    let mut h = [1.0f32; 12];
    host_copy2d_ad(&mut h, PITCH_X, x, 20, W, H);
    box_sum_sq(&h)
}

pub(crate) fn run_host() -> bool {
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let y = df_host(&X, &mut dx, 1.0);
    let mut ok = report(
        "host   (pageable -> pageable -> pageable, f32)",
        y,
        dx,
        since(c0),
        2,
        "",
    );
    ok &= report_fwd("host forward mode", |e| df_host_fwd(&X, e), 2);

    let c0 = calls();
    let mut dx64 = [0.0f64; 3];
    let y64 = df_host64(&[1.0, 2.0, 3.0], &mut dx64, 1.0);
    let c = since(c0);
    let err = take_error();
    let ok64 = y64 == 14.0 && dx64 == [2.0, 4.0, 6.0] && c == reverse_calls(2) && err.is_none();
    println!(
        "host64 (the generic rule's f64 bridge): f = {y64}, dx = {dx64:?}, augmented primals = {}, reverses = {}, error = {err:?} -> {}",
        c.augmented_primal,
        c.reverse,
        if ok64 { "OK" } else { "WRONG" }
    );
    ok &= ok64;

    // Outside differentiation, `_ad` runs the primal bridge (through the rule's checks).
    let c0 = calls();
    let mut h = [0.0f32; 3];
    host_copy_ad(&mut h, &X, 3);
    let c = since(c0);
    let want = Calls {
        primal: 1,
        ..Calls::default()
    };
    let okp = h == X && c == want && take_error().is_none();
    println!(
        "primal (host_copy_ad outside autodiff): h = {h:?}, primal calls = {} -> {}",
        c.primal,
        if okp { "OK" } else { "WRONG" }
    );
    ok &= okp;

    // The pitched 2D round trip on host memory.
    let c0 = calls();
    let mut dx2 = [0.0f32; 12];
    let y = df_host2d(&X2, &mut dx2, 1.0);
    ok &= report_any(
        "host2d (pageable rows -> pageable rows -> pageable rows, pitches 16/20/16 B, 3x3 box)",
        (y, F2),
        &dx2,
        &WANT2,
        since(c0),
        2,
        "",
    );

    // The 2D round trip in forward mode: one unit tangent per element of x, padding included
    // (whose derivative is 0).
    let c0 = calls();
    let mut grad2 = [0.0f32; 12];
    let mut y = 0.0;
    for (i, g) in grad2.iter_mut().enumerate() {
        let mut e = [0.0f32; 12];
        e[i] = 1.0;
        (y, *g) = df_host2d_fwd(&X2, &e);
    }
    let c = since(c0);
    let err = take_error();
    let ok2f = y == F2
        && grad2 == WANT2
        && c == Calls {
            forward: 24,
            ..Calls::default()
        }
        && err.is_none();
    println!(
        "host2d forward mode: f = {y}, gradient = {grad2:?} (want {WANT2:?}), forward rules = {} (want 24), error = {err:?} -> {}",
        c.forward,
        if ok2f { "OK" } else { "WRONG" }
    );
    ok &= ok2f;

    // The 3D round trip: the box is x's elements whose index mod 4 is below 3.
    let x3: [f32; 16] = core::array::from_fn(|i| if i % 4 < 3 { (i + 1) as f32 } else { 100.0 });
    let want3: [f32; 16] =
        core::array::from_fn(|i| if i % 4 < 3 { 2.0 * (i + 1) as f32 } else { 0.0 });
    let f3: f32 = x3
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 4 < 3)
        .map(|(_, v)| v * v)
        .sum();
    let c0 = calls();
    let mut dx3 = [0.0f32; 16];
    let y = df_host3d(&x3, &mut dx3, 1.0);
    ok &= report_any(
        "host3d (pageable -> pageable -> pageable, 2 slices of 2 rows of 3, pitches 16/12/16 B, slice heights 2/3/2 rows)",
        (y, f3),
        &dx3,
        &want3,
        since(c0),
        2,
        "",
    );

    // A memset between: its reverse zeroes the cotangent of what it overwrote.
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let y = df_host_set(&X, &mut dx, 1.0);
    ok &= report_any(
        "host memset (copy, then h[0] <- 0)",
        (y, 13.0),
        &dx,
        &[0.0, 4.0, 6.0],
        since(c0),
        2,
        "",
    );

    // A fill with an active value: Enzyme gets d_a from the fill's reverse (d_v = sum of the
    // filled cotangents), and dx only where the fill did not overwrite.
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let (y, da) = df_host_fill(&X, &mut dx, 5.0, 1.0);
    let c = since(c0);
    ok &= report_any(
        "host fill (copy, then h[1..3] <- a = 5), reverse",
        (y, 51.0),
        &[dx[0], dx[1], dx[2], da],
        &[2.0, 0.0, 0.0, 20.0],
        c,
        2,
        " (dx then da)",
    );
    // Forward mode: tangents (e1, 0), (e2, 0), (e3, 0), (0, 1) give the same gradient.
    let c0 = calls();
    let mut grad = [0.0f32; 4];
    let mut y = 0.0;
    for (i, g) in grad.iter_mut().enumerate() {
        let mut e = [0.0f32; 3];
        let mut ea = 0.0;
        match i {
            3 => ea = 1.0,
            i => e[i] = 1.0,
        }
        (y, *g) = df_host_fill_fwd(&X, &e, 5.0, ea);
    }
    let c = since(c0);
    let err = take_error();
    let okf = y == 51.0
        && grad == [2.0, 0.0, 0.0, 20.0]
        && c == Calls {
            forward: 8,
            ..Calls::default()
        }
        && err.is_none();
    println!(
        "host fill forward mode: f = {y}, (df.e1, df.e2, df.e3, df.ea) = {grad:?} (want [2.0, 0.0, 0.0, 20.0]), forward rules = {} (want 8), error = {err:?} -> {}",
        c.forward,
        if okf { "OK" } else { "WRONG" }
    );
    ok &= okf;

    // The 2D misuse: refused, nothing read or differentiated.
    let c0 = calls();
    let mut dx2 = [0.0f32; 12];
    let y = df_2d_too_far(&X2, &mut dx2, 1.0);
    let c = since(c0);
    let err = take_error();
    let oke2 =
        dx2 == [0.0; 12] && c == reverse_calls(1) && err.as_ref().is_some_and(|(_, n)| *n == 2);
    match &err {
        Some((first, n)) => println!(
            "misuse 2d (source rows 20 B apart in 12 elements): f = {y}, dx = {dx2:?}, {n} errors, the first: {first} -> {}",
            if oke2 { "OK (refused)" } else { "WRONG" }
        ),
        None => println!("misuse 2d: f = {y}, dx = {dx2:?}, no error recorded -> WRONG"),
    }
    ok &= oke2;

    // The misuse: refused in the augmented primal, no tape for the reverse; dx stays zero.
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let y = df_too_long(&X, &mut dx, 1.0);
    let c = since(c0);
    let err = take_error();
    let oke = dx == [0.0; 3] && c == reverse_calls(1) && err.as_ref().is_some_and(|(_, n)| *n == 2);
    match &err {
        Some((first, n)) => println!(
            "misuse (n = 4 of 3): f = {y}, dx = {dx:?}, {n} errors, the first: {first} -> {}",
            if oke { "OK (refused)" } else { "WRONG" }
        ),
        None => println!("misuse (n = 4 of 3): f = {y}, dx = {dx:?}, no error recorded -> WRONG"),
    }
    ok & oke
}
