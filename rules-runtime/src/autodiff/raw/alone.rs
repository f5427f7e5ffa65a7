//! A GPU test in a process of its own, for the tests that capture a stream: while a capture lasts
//! anywhere in the process, a thread that makes a stream through cudarc (which synchronises the
//! context for its first streams) is refused and invalidates the capture, whatever the capture's
//! mode, so a capture cannot share a test binary's threads with other GPU tests.

use std::process::Command;

/// Runs `body` in a child process of this test binary that runs only the test `name` (its path
/// as `module_path!()` gives it, with the function's name), and asserts that it passed there.
pub(super) fn alone(name: &str, body: impl FnOnce()) {
    const CHILD: &str = "RULES_RUNTIME_TEST_ALONE";
    // The name as libtest filters it: the module path without the crate's name.
    let test = name.split_once("::").map_or(name, |(_, rest)| rest);
    if std::env::var_os(CHILD).is_some_and(|v| v == test) {
        body();
        return;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", test, "--include-ignored", "--nocapture"])
        .env(CHILD, test)
        .output()
        .expect("the test binary itself");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Passed, and it was this test that ran (a filter matching nothing passes too).
    assert!(
        out.status.success() && text.contains("1 passed"),
        "`{test}` in its own process ({}):\n{text}",
        out.status
    );
}
