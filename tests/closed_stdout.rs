//! The examples as Unix tools: a closed standard output (`example | head`)
//! ends them quietly, with no panic and no backtrace.

use std::process::{Command, Stdio};

mod support;

#[test]
fn a_closed_stdout_ends_every_example_quietly() {
    for (name, args) in [
        (
            "shedding",
            &["run", "--duration-s", "0.3", "--profile", "constant:1000"][..],
        ),
        ("wordcount", &["--records", "1000"][..]),
        ("spatial", &["--points", "100"][..]),
    ] {
        let mut child = Command::new(support::example(name))
            .args(args)
            .arg("--quiet")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the example prints its summary.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{name}: {stderr}"
        );
        // Ended by the signal, as `yes | head` ends `yes` (no exit code),
        // or finished before it wrote; never the exit code of a panic.
        assert_ne!(out.status.code(), Some(101), "{name}: {:?}", out.status);
    }
}
