//! The tapes the augmented primals keep for their reverses (`tapes`): each reverse takes its own,
//! in the reverse order Enzyme runs them, on its thread, and nothing else.
use super::ready::for_f32 as b;
use super::tapes::{aug_ok, saved_len};
use crate::autodiff::{AdBuf, AdError, AdPair, take_error};

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// Held: a loop's augmented primals, then their reverses in reverse order (Enzyme's sweep), each
/// reverse with its own tape: x → dev → h a hundred times, the seed of iteration k being k + 1,
/// gives dx = Σ (k + 1) = 5050 in every element, and leaves no entry behind.
#[test]
fn reverses_in_reverse_order_take_the_tapes_of_their_own_calls() {
    const N: usize = 100;
    let (mut a, mut da) = (vec![0.0f32; 3], vec![0.0f32; 3]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (dev, ddev): (*const AdBuf<f32>, *const AdBuf<f32>) = (dev, ddev);
    let (mut x, mut dx) = ([1.0f32, 2.0, 3.0], [0.0f32; 3]);
    let mut h = [[0.0f32; 3]; N];
    let mut dh = [[0.0f32; 3]; N];
    let before = saved_len();
    for k in 0..N {
        // SAFETY (each call): live handles of one pair; arrays of 3 and their shadows.
        unsafe { b::htod_aug(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::dtoh_aug(h[k].as_mut_ptr(), dh[k].as_mut_ptr(), 3, 3, dev, ddev) };
        assert!(aug_ok(), "{}", error_text());
    }
    assert_eq!(saved_len(), before + 2 * N);
    for k in (0..N).rev() {
        dh[k] = [(k + 1) as f32; 3];
        // SAFETY: as above.
        unsafe { b::dtoh_rev(h[k].as_mut_ptr(), dh[k].as_mut_ptr(), 3, 3, dev, ddev) };
        unsafe { b::htod_rev(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    }
    assert_eq!(error_text(), "");
    assert_eq!(saved_len(), before, "every reverse took its own entry");
    assert_eq!(dx, [5050.0; 3]);
    assert!(dh.iter().all(|d| *d == [0.0; 3]), "each seed consumed");
}

/// Held: the tapes are the thread's. A reverse on another thread finds none of the augmented
/// primal's (it records the error there and writes nothing); on the augmented primal's thread
/// the reverse then takes it.
#[test]
fn a_reverse_on_another_thread_takes_no_tape() {
    let (mut a, mut da) = (vec![0.0f32; 3], vec![0.0f32; 3]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (mut x, mut dx) = ([1.0f32, 2.0, 3.0], [0.0f32; 3]);
    // SAFETY: live handles of one pair; arrays of 3.
    unsafe { b::htod_aug(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert!(aug_ok(), "{}", error_text());
    // The pointers as they are (casts through integers lose their provenance under Miri's
    // strict provenance): the spawning thread waits for the other, so they stay valid.
    struct Args(*const AdBuf<f32>, *const AdBuf<f32>, *mut f32, *mut f32);
    // SAFETY: only read on the other thread while this one waits for it.
    unsafe impl Send for Args {}
    let args = Args(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr());
    let there = std::thread::spawn(move || {
        let args = args;
        // SAFETY: the same live handles and arrays (the spawning thread waits for this one).
        unsafe { b::htod_rev(args.0, args.1, args.2, args.3, 3, 3) };
        take_error()
    })
    .join()
    .unwrap();
    assert!(
        matches!(&there, Some((e, 1)) if matches!(e.error, AdError::TapeOrder)),
        "{there:?}"
    );
    assert_eq!(dx, [0.0; 3], "nothing written from the other thread");
    // The pair's shadow, seeded, goes to dx through the reverse on this thread.
    // SAFETY: as above.
    let (mut h, mut dh) = ([0.0f32; 3], [0.0f32; 3]);
    unsafe { b::dtoh_aug(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    dh = [1.0; 3];
    unsafe { b::dtoh_rev(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    unsafe { b::htod_rev(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert_eq!(error_text(), "");
    assert_eq!(dx, [1.0; 3]);
}

/// Held: an augmented primal that failed keeps an entry without a tape, which its reverse takes
/// (reporting that there is no tape), so the reverses before it still find their own.
#[test]
fn a_failed_augmented_primal_keeps_the_order_of_the_reverses() {
    let (mut a, mut da) = (vec![0.0f32; 3], vec![0.0f32; 3]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (mut x, mut dx) = ([1.0f32, 2.0, 3.0], [0.0f32; 3]);
    let (mut h, mut dh) = ([0.0f32; 4], [0.0f32; 4]);
    let before = saved_len();
    // SAFETY (each call): live handles; arrays of the lengths given.
    unsafe { b::htod_aug(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert!(aug_ok(), "{}", error_text());
    // 4 elements out of a buffer of 3: refused, nothing copied.
    unsafe { b::dtoh_aug(h.as_mut_ptr(), dh.as_mut_ptr(), 4, 4, dev, ddev) };
    assert!(!aug_ok());
    assert!(error_text().contains("memcpy_dtoh (augmented primal)"));
    dh = [5.0; 4];
    unsafe { b::dtoh_rev(h.as_mut_ptr(), dh.as_mut_ptr(), 4, 4, dev, ddev) };
    let e = take_error();
    assert!(
        matches!(&e, Some((e, 1)) if matches!(e.error, AdError::NoTape)),
        "{e:?}"
    );
    assert_eq!(dh, [5.0; 4], "the failed call's reverse wrote nothing");
    unsafe { b::htod_rev(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert_eq!(error_text(), "");
    assert_eq!(saved_len(), before);
    assert_eq!(h, [0.0; 4]);
}
