//! The misuse catalogue of `#[derivative_rule]`: every `compile_fail/<category>/*.rs` must fail with
//! exactly its `.stderr` snapshot, and every `pass/*.rs` must compile. Regenerate snapshots with
//! `TRYBUILD=overwrite cargo test -p ui-tests`, then read each one.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("compile_fail/*/*.rs");
}
