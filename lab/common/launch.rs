//! Starting an example program as a cluster: `processes` processes of
//! `workers` threads each on 127.0.0.1, over a hostfile of free ports, and
//! reading the report the process hosting worker 0 writes. The cluster
//! benchmark and the cluster tests run the examples through it, exactly as
//! a user would start them.

use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Error;

/// Processes × worker threads per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Processes.
    pub processes: usize,
    /// Worker threads in each.
    pub workers: usize,
}

impl Shape {
    /// `processes` × `workers`.
    pub fn new(processes: usize, workers: usize) -> Self {
        Shape { processes, workers }
    }

    /// One process with as many workers as this shape has in all.
    pub fn one_process(self) -> Self {
        Shape::new(1, self.processes * self.workers)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} × {}", self.processes, self.workers)
    }
}

/// Runs `program` with `args` as a cluster of `shape` on 127.0.0.1, each
/// process quiet and told to write its report to a scratch file, and
/// returns the report (the JSON of process 0's `--report`). A process that
/// fails, or a run longer than `timeout`, ends every process of the run and
/// is an error naming the process and its last line on stderr.
pub fn run_cluster(
    program: &Path,
    args: &[String],
    shape: Shape,
    timeout: Duration,
) -> Result<serde_json::Value, Error> {
    let scratch = scratch_dir()?;
    let report = scratch.join(format!("report-{}.json", free_port()?));
    let mut common: Vec<String> = args.to_vec();
    common.extend(["--quiet", "--report"].map(String::from));
    common.push(report.display().to_string());
    common.extend(["-w".to_string(), shape.workers.to_string()]);
    if shape.processes > 1 {
        let hostfile = scratch.join(format!("hosts-{}.txt", free_port()?));
        // Held until all are chosen, so that no port is handed out twice.
        let listeners = (0..shape.processes)
            .map(|_| TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr().map(|a| (l, a.port()))))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Cluster(format!("no free port on 127.0.0.1: {e}")))?;
        let hosts: String = listeners
            .iter()
            .map(|(_, port)| format!("127.0.0.1:{port}\n"))
            .collect();
        drop(listeners);
        std::fs::write(&hostfile, hosts).map_err(|source| Error::Io {
            path: hostfile.clone(),
            source,
        })?;
        common.extend(["-n".to_string(), shape.processes.to_string(), "--hostfile".to_string()]);
        common.push(hostfile.display().to_string());
    }
    let mut children = Vec::with_capacity(shape.processes);
    // The highest-numbered first: each connects to those below it.
    for process in (0..shape.processes).rev() {
        let child = Command::new(program)
            .args(&common)
            .args(["-p".to_string(), process.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| Error::Io {
                path: program.to_owned(),
                source,
            });
        match child {
            Ok(child) => children.push((process, child)),
            Err(error) => {
                end_all(&mut children);
                return Err(error);
            }
        }
    }
    wait_all(program, children, timeout)?;
    let text = std::fs::read_to_string(&report).map_err(|source| Error::Io {
        path: report.clone(),
        source,
    })?;
    let _ = std::fs::remove_file(&report);
    serde_json::from_str(&text).map_err(|e| Error::Runtime(format!("{}: {e}", report.display())))
}

/// Waits for every child; the first that fails (or the deadline) ends the
/// others.
fn wait_all(program: &Path, mut children: Vec<(usize, Child)>, timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    let name = program.file_name().unwrap_or_default().to_string_lossy().into_owned();
    while !children.is_empty() {
        let mut index = 0;
        while index < children.len() {
            let (process, child) = &mut children[index];
            let status = child
                .try_wait()
                .map_err(|e| Error::Runtime(format!("{name} process {process}: {e}")))?;
            match status {
                None => index += 1,
                Some(status) if status.success() => {
                    children.swap_remove(index);
                }
                Some(status) => {
                    let process = *process;
                    let (_, child) = children.swap_remove(index);
                    let stderr = child
                        .wait_with_output()
                        .map(|out| String::from_utf8_lossy(&out.stderr).into_owned())
                        .unwrap_or_default();
                    end_all(&mut children);
                    let last = stderr.lines().last().unwrap_or("no message");
                    return Err(Error::Cluster(format!(
                        "{name} process {process} failed ({status}): {last}"
                    )));
                }
            }
        }
        if Instant::now() >= deadline {
            end_all(&mut children);
            return Err(Error::Cluster(format!(
                "{name} did not finish within {} s",
                timeout.as_secs_f64()
            )));
        }
        // Polled: the processes are minutes long at most, and a failed one
        // must end its peers whichever fails first.
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn end_all(children: &mut Vec<(usize, Child)>) {
    for (_, child) in children.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    children.clear();
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> Result<u16, Error> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| Error::Cluster(format!("no free port on 127.0.0.1: {e}")))
}

fn scratch_dir() -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!("equipoise-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    Ok(dir)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A shell script in the scratch directory that ignores its arguments.
    fn script(name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = scratch_dir().unwrap().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_failing_process_ends_the_run_with_its_last_line() {
        let program = script("fails.sh", "echo starting >&2; echo 'bad flag' >&2; exit 3");
        let error = run_cluster(&program, &[], Shape::new(2, 1), Duration::from_secs(30)).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("fails.sh process") && text.contains("bad flag"), "{text}");
    }

    #[test]
    fn a_run_past_its_timeout_is_ended() {
        let program = script("hangs.sh", "sleep 30");
        let started = Instant::now();
        let error = run_cluster(&program, &[], Shape::new(2, 1), Duration::from_millis(200)).unwrap_err();
        assert!(error.to_string().contains("did not finish within 0.2 s"), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the processes were not ended"
        );
    }
}
