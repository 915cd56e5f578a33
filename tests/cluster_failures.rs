//! Clusters that cannot run fail loudly: every process exits non-zero,
//! soon, with one line naming what is wrong and where.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
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

/// Process `process` of two of example `command[0]` (with its subcommand,
/// if any, after it) over `hostfile`, with `args`; its stderr captured.
fn command(command: &[&str], process: &str, hostfile: &std::path::Path, args: &[&str]) -> Command {
    let mut started = Command::new(support::example(command[0]));
    started
        .args(&command[1..])
        .args(["-n", "2", "-p", process, "--hostfile"])
        .arg(hostfile)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    started
}

/// The same, quiet, started.
fn spawn(what: &[&str], process: &str, hostfile: &std::path::Path, args: &[&str]) -> Child {
    command(what, process, hostfile, args).arg("--quiet").spawn().unwrap()
}

/// A small word count: 100 records unless `extra` says otherwise.
fn wordcount(process: &str, hostfile: &std::path::Path, extra: &[&str]) -> std::process::Child {
    let records: &[&str] = if extra.contains(&"--records") {
        &[]
    } else {
        &["--records", "100"]
    };
    spawn(&["wordcount"], process, hostfile, &[records, extra].concat())
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
        spawn(&["spatial"], "0", &hostfile, &["--points", "100"]),
        spawn(&["spatial"], "1", &hostfile, &["--points", "200"]),
    ];
    all_refuse(children, &["`--points 100`", "`--points 200`"]);
}

/// A process of a long run, its stderr read as it comes.
struct Running {
    child: Child,
    /// Its stderr but for progress lines, once it has exited.
    stderr: std::thread::JoinHandle<String>,
}

impl Running {
    /// Waits for it to exit: its status and stderr.
    fn finish(mut self) -> (ExitStatus, String) {
        let status = self.child.wait().unwrap();
        (status, self.stderr.join().unwrap())
    }
}

/// Two shedding processes that would run for 30 s, once both are connected
/// and running: process 0 reports progress (its first line comes a second
/// into the dataflow, which starts only once both are connected); `args`
/// for process 1.
fn a_long_run(name: &str, args: &[&str]) -> [Running; 2] {
    let hostfile = two_hosts(name);
    let long = ["--duration-s", "30", "--profile", "constant:1000"];
    let (ready, running) = mpsc::channel();
    let processes = [
        command(&["shedding", "run"], "0", &hostfile, &long).spawn().unwrap(),
        spawn(&["shedding", "run"], "1", &hostfile, &[&long[..], args].concat()),
    ]
    .map(|mut child| {
        let pipe = child.stderr.take().unwrap();
        let ready = ready.clone();
        let stderr = std::thread::spawn(move || {
            let mut said = String::new();
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if line.starts_with("[shedding]") {
                    let _ = ready.send(());
                } else {
                    said.push_str(&line);
                    said.push('\n');
                }
            }
            said
        });
        Running { child, stderr }
    });
    // Many processes share this machine's cores while the tests run: allow
    // a minute to connect.
    running
        .recv_timeout(Duration::from_secs(60))
        .expect("process 0 reported no progress within 60 s");
    processes
}

/// What a process said on stderr, once it exited, and how long it took;
/// fails the test unless it exited non-zero, without a panic, with one line
/// besides the start-up's waiting line, saying all of `expected`.
fn one_line_failure(process: Running, since: Instant, expected: &[&str]) -> Duration {
    let (status, stderr) = process.finish();
    let took = since.elapsed();
    assert!(!status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|line| !line.contains("waiting for")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(expected.iter().all(|e| said[0].contains(e)), "{stderr}");
    took
}

#[test]
fn a_peer_killed_mid_run_ends_the_other_with_one_line() {
    let [survivor, mut killed] = a_long_run("killed-hosts.txt", &[]);
    killed.child.kill().unwrap();
    let since = Instant::now();
    let took = one_line_failure(
        survivor,
        since,
        &["process 1 at 127.0.0.1:", "disconnected during the run"],
    );
    killed.finish();
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_frozen_peer_is_given_up_after_the_stall_timeout() {
    let [mut frozen, waiting] = a_long_run("frozen-hosts.txt", &["--stall-timeout-s", "2"]);
    let status = Command::new("kill")
        .args(["-STOP", &frozen.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let since = Instant::now();
    let (status, stderr) = waiting.finish();
    let took = since.elapsed();
    frozen.child.kill().unwrap();
    frozen.finish();
    assert!(!status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("nothing from process 0 at 127.0.0.1:")
            && stderr.contains("process 0 at 127.0.0.1:")
            && stderr.contains("sent nothing for 2 s (--stall-timeout-s): stopped or frozen"),
        "{stderr}"
    );
    // Silence counts from the last heartbeat heard, up to 250 ms before the stop.
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(10),
        "{took:?}"
    );
}
