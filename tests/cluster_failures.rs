//! Clusters that cannot run fail loudly: every process exits non-zero,
//! soon, with one line naming what is wrong and where.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{free_port, scratch};

mod support;

#[test]
fn a_malformed_hostfile_stops_every_process_with_file_and_line() {
    let hostfile = scratch("bad-hosts.txt");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:notaport\n", free_port())).unwrap();
    let started = Instant::now();
    let expected = format!(
        "{}:2: `127.0.0.1:notaport` is not a host:port address",
        hostfile.display()
    );
    let children = ["0", "1"].map(|process| wordcount(process, &hostfile, &[]));
    for stderr in all_refuse(children, &[&expected]) {
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A hostfile of two fresh ports on 127.0.0.1.
fn two_hosts(name: &str) -> std::path::PathBuf {
    let hostfile = scratch(name);
    std::fs::write(
        &hostfile,
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port()),
    )
    .unwrap();
    hostfile
}

/// Process `process` of two of example `name` over `hostfile`, quiet,
/// with `args`; its stderr captured.
fn spawn(name: &str, process: &str, hostfile: &std::path::Path, args: &[&str]) -> std::process::Child {
    Command::new(support::example(name))
        .args(["--quiet", "-n", "2", "-p", process, "--hostfile"])
        .arg(hostfile)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A small word count: 100 records unless `extra` says otherwise.
fn wordcount(process: &str, hostfile: &std::path::Path, extra: &[&str]) -> std::process::Child {
    let records: &[&str] = if extra.contains(&"--records") {
        &[]
    } else {
        &["--records", "100"]
    };
    spawn("wordcount", process, hostfile, &[records, extra].concat())
}

/// Every process failed, without a panic, saying all of `expected`; their
/// stderr.
fn all_refuse(children: impl IntoIterator<Item = std::process::Child>, expected: &[&str]) -> Vec<String> {
    let mut said = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{stderr}");
        assert!(expected.iter().all(|e| stderr.contains(e)), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        said.push(stderr);
    }
    said
}

#[test]
fn a_process_whose_peer_never_starts_gives_up_after_the_timeout() {
    let hostfile = two_hosts("lonely-hosts.txt");
    let started = Instant::now();
    let out = wordcount("0", &hostfile, &["--connect-timeout-s", "1"])
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("waiting for process 1 at 127.0.0.1:"), "{stderr}");
    assert!(
        stderr.contains("did not connect within 1 s (--connect-timeout-s)"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn processes_started_with_different_cluster_settings_refuse_to_run() {
    let hostfile = two_hosts("mismatch-hosts.txt");
    let started = Instant::now();
    let children = [
        wordcount("0", &hostfile, &["-w", "1"]),
        wordcount("1", &hostfile, &["-w", "2"]),
    ];
    all_refuse(children, &["every process needs the same settings"]);
    // The program's own settings too: a different stream would count
    // silently wrong.
    let hostfile = two_hosts("records-hosts.txt");
    let children = [
        wordcount("0", &hostfile, &["--records", "300"]),
        wordcount("1", &hostfile, &[]),
    ];
    all_refuse(children, &["`--records 300`", "`--records 100`"]);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn spatial_processes_with_different_points_refuse_to_run() {
    let hostfile = two_hosts("spatial-hosts.txt");
    let children = [
        spawn("spatial", "0", &hostfile, &["--points", "100"]),
        spawn("spatial", "1", &hostfile, &["--points", "200"]),
    ];
    all_refuse(children, &["`--points 100`", "`--points 200`"]);
}
