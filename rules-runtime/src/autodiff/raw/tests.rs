//! The bridges on host memory: activities, refusals, a caught panic, handle checks.
use super::bridge::Resolved;
use super::*;
use crate::autodiff::take_error;

#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate)]
unsafe fn host_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate)]
unsafe fn panicking(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    let _ = (dst, src);
    panic!("the primitive panicked at n = {n}");
}

/// A host slice and its shadow as a bridge sees them; `inactive`: Enzyme's inactive slot.
fn slice(p: &mut [f32; 3], d: &mut [f32; 3], inactive: bool) -> Side<f32> {
    let p = p.as_mut_ptr();
    Side::Slice(p, 3, if inactive { p } else { d.as_mut_ptr() })
}

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

#[test]
fn active_source_and_destination_move_the_cotangent() {
    let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
    // SAFETY: live arrays of 3 elements.
    let tape = unsafe {
        bridge_aug(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
        )
    };
    assert!(tape.is_some(), "{}", error_text());
    assert_eq!(y, [1.0, 2.0, 3.0]);
    dy = [2.0, 4.0, 6.0];
    // SAFETY: as above, and the tape of that call.
    unsafe {
        bridge_rev(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
            tape,
        )
    };
    assert_eq!(error_text(), "");
    assert_eq!((dx, dy), ([2.0, 4.0, 6.0], [0.0; 3]));
}

#[test]
fn an_inactive_source_is_const_and_untouched() {
    let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
    // SAFETY: live arrays of 3 elements.
    let tape = unsafe {
        bridge_aug(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, true),
        )
    };
    assert!(tape.is_some(), "{}", error_text());
    dy = [5.0; 3];
    // SAFETY: as above.
    unsafe {
        bridge_rev(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, true),
            tape,
        )
    };
    assert_eq!(error_text(), "");
    // Const source: nothing accumulated into it (not into its primal either); the
    // destination's cotangent consumed.
    assert_eq!((x, dx, dy), ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3]));
}

#[test]
fn an_inactive_destination_of_an_active_source_is_refused() {
    let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
    // SAFETY: live arrays of 3 elements.
    let tape = unsafe {
        bridge_aug(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, true),
            slice(&mut x, &mut dx, false),
        )
    };
    assert!(tape.is_none());
    assert_eq!(y, [0.0; 3], "nothing copied");
    // SAFETY: as above; a null tape.
    unsafe {
        bridge_rev(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, true),
            slice(&mut x, &mut dx, false),
            tape,
        )
    };
    let text = error_text();
    assert!(
        text.starts_with(
            "2: t (augmented primal): `dst`: Enzyme treated the destination as inactive"
        ),
        "{text}"
    );
    assert_eq!(dx, [0.0; 3]);
}

#[test]
fn both_inactive_copy_and_do_nothing_more() {
    let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
    // SAFETY: live arrays of 3 elements.
    let tape = unsafe {
        bridge_aug(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, true),
            slice(&mut x, &mut dx, true),
        )
    };
    assert!(tape.is_some(), "{}", error_text());
    assert_eq!(y, x);
    // SAFETY: as above.
    unsafe {
        bridge_rev(
            "t",
            |_| Ok(Linear(host_copy_rule(3))),
            slice(&mut y, &mut dy, true),
            slice(&mut x, &mut dx, true),
            tape,
        )
    };
    assert_eq!(error_text(), "");
    assert_eq!((x, y), ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]));
}

#[test]
fn a_panic_is_caught_at_the_edge() {
    let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
    // SAFETY: live arrays of 3 elements.
    let tape = unsafe {
        bridge_aug(
            "p",
            |_| Ok(Linear(panicking_rule(3))),
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
        )
    };
    assert!(tape.is_none());
    let text = error_text();
    assert!(text.contains("p (augmented primal): panic"), "{text}");
}

#[test]
fn handles_are_checked_for_kind_pairing_and_length() {
    let (mut a, mut da) = (vec![1.0f32, 2.0, 3.0], vec![0.0f32; 3]);
    let (mut b, mut db) = (vec![0.0f32; 2], vec![0.0f32; 2]);
    let mut short = vec![0.0f32; 2];
    let err = pair(&mut a.clone(), &mut short)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("length mismatch"), "{err}");
    let mut pa = pair(&mut a, &mut da).unwrap();
    let mut pb = pair(&mut b, &mut db).unwrap();
    let (ha, hda) = pa.split();
    let (hb, hdb) = pb.split();
    let (ha, hda, hb, hdb): (
        *const AdBuf<f32>,
        *const AdBuf<f32>,
        *const AdBuf<f32>,
        *const AdBuf<f32>,
    ) = (ha, hda, hb, hdb);
    // SAFETY: live handles.
    unsafe {
        let ok = Side::Handle(ha, hda, MemoryKind::Host).resolve("x", fits(0, 3));
        assert!(matches!(ok, Ok(Resolved::Dup(..))));
        let inactive = Side::Handle(ha, ha, MemoryKind::Host).resolve("x", fits(0, 3));
        assert!(matches!(inactive, Ok(Resolved::Const(..))));
        let kind = Side::Handle(ha, hda, MemoryKind::Device)
            .resolve("x", fits(0, 3))
            .err()
            .unwrap();
        assert!(
            kind.to_string()
                .contains("expected the primal handle of Device memory"),
            "{kind}"
        );
        let swapped = Side::Handle(hda, ha, MemoryKind::Host)
            .resolve("x", fits(0, 3))
            .err()
            .unwrap();
        assert!(
            swapped.to_string().contains("got the shadow handle"),
            "{swapped}"
        );
        let other = Side::Handle(ha, hdb, MemoryKind::Host)
            .resolve("x", fits(0, 3))
            .err()
            .unwrap();
        assert!(
            other.to_string().contains("not this buffer's shadow"),
            "{other}"
        );
        let long = Side::Handle(hb, hdb, MemoryKind::Host)
            .resolve("x", fits(1, 2))
            .err()
            .unwrap();
        assert!(
            long.to_string()
                .contains("has 2 elements but 3 were expected"),
            "{long}"
        );
    }
}

/// What a pointer copy of `n` elements from `offset` reaches, as `Side::resolve` asks.
fn fits(
    offset: usize,
    n: usize,
) -> impl FnOnce(&'static str, usize) -> Result<(), crate::autodiff::AdError> {
    move |what, len| super::rules::linear_fits(what, offset, n, len)
}

/// A pair of host buffers (no stream needed for host memory).
fn pair<'a>(p: &'a mut Vec<f32>, s: &'a mut Vec<f32>) -> crate::error::Result<AdPair<'a, f32>> {
    AdPair::new_host(p, s)
}
