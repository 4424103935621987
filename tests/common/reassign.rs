//! Running `kastle` and its `reassign-partitions` tool from the reassignment tests.

use std::process::Command;

/// Runs `kastle <args>`: (exit code, stdout, stderr).
pub fn kastle(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kastle"))
        .args(args)
        .env("KASTLE_LOG", "warn")
        .output()
        .expect("run kastle");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `kastle reassign-partitions --bootstrap-server <bootstrap> <args>`.
pub fn reassign(bootstrap: &str, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["reassign-partitions", "--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    kastle(&all)
}

/// [`reassign`], which must succeed: its stdout.
pub fn ok(bootstrap: &str, args: &[&str]) -> String {
    let (code, out, err) = reassign(bootstrap, args);
    assert_eq!(code, 0, "reassign-partitions {args:?}: {out}{err}");
    out
}
