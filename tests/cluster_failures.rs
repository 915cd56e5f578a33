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
    let children: Vec<_> = ["0", "1"]
        .into_iter()
        .map(|process| {
            Command::new(support::example("wordcount"))
                .args(["--records", "100", "--quiet", "-n", "2", "-p", process, "--hostfile"])
                .arg(&hostfile)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        let expected = format!(
            "{}:2: `127.0.0.1:notaport` is not a host:port address",
            hostfile.display()
        );
        assert!(stderr.contains(&expected), "{stderr}");
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

fn wordcount(process: &str, hostfile: &std::path::Path, extra: &[&str]) -> std::process::Child {
    Command::new(support::example("wordcount"))
        .args(["--quiet", "-n", "2", "-p", process, "--hostfile"])
        .arg(hostfile)
        .args(if extra.contains(&"--records") {
            &[][..]
        } else {
            &["--records", "100"][..]
        })
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
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
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("every process needs the same settings"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // The program's own settings too: a different stream would count
    // silently wrong.
    let hostfile = two_hosts("records-hosts.txt");
    let children = [
        wordcount("0", &hostfile, &["--records", "300"]),
        wordcount("1", &hostfile, &[]),
    ];
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("`--records 300`") && stderr.contains("`--records 100`"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn spatial_processes_with_different_points_refuse_to_run() {
    let hostfile = two_hosts("spatial-hosts.txt");
    let spatial = |process: &str, points: &str| {
        Command::new(support::example("spatial"))
            .args(["--quiet", "-n", "2", "-p", process, "--points", points, "--hostfile"])
            .arg(&hostfile)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for child in [spatial("0", "100"), spatial("1", "200")] {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("`--points 100`") && stderr.contains("`--points 200`"),
            "{stderr}"
        );
    }
}
