//! The call fingerprint of the one-call rule checks.

use super::fingerprint as fp;

/// The word-wise fingerprint (`rules::fingerprint`: one multiply per word, so that a call stays cheap): structured families of realistic
/// calls (addresses below 2^48, 256-byte aligned) do not collide: dst/src swapped, both moved by
/// one delta, one moved by +d and the other by −d. A collision needs words that differ in bits
/// the multiply cannot spread (bit 63 and then bits 63 and 34 of the next word): no address or
/// length of a real buffer has them.
#[cfg(not(miri))]
#[test]
fn structured_families_of_calls_do_not_collide() {
    let mut seen = std::collections::HashMap::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut collisions = 0;
    let mut add = |w: [u64; 4], seen: &mut std::collections::HashMap<u64, [u64; 4]>| {
        if let Some(o) = seen.insert(fp(w), w)
            && o != w
        {
            collisions += 1;
        }
    };
    for _ in 0..200_000 {
        let a = (next() % (1 << 40)) << 8;
        let b = (next() % (1 << 40)) << 8;
        let m = (next() % (1 << 30)) * 4;
        let d = ((next() % (1 << 20)) + 1) << 8;
        for w in [
            [a, a + m, b, b + m],
            [b, b + m, a, a + m],
            [a + d, a + d + m, b + d, b + d + m],
            [a + d, a + d + m, b.wrapping_sub(d), b.wrapping_sub(d) + m],
        ] {
            add(w, &mut seen);
        }
    }
    assert_eq!(collisions, 0);
    // The crafted pair (documentation of the mixing's reach, not a realistic call).
    let w = [1u64, 2, 3, 4];
    let v = [1 ^ (1 << 63), 2 ^ (1 << 63) ^ (1 << 34), 3, 4];
    assert_eq!(fp(w), fp(v));
}
