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
