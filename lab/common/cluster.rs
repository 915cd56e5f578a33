//! timely's own flags (`-w`, `-n`, `-p`, `--hostfile`) for programs that parse
//! the rest of their command line with clap.
//!
//! `timely::execute_from_args` parses with getopts and rejects any flag it does
//! not know, so equipoise's programs parse these themselves and build the
//! `timely::Config`.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::{AllocatorBuilder, Hooks, WorkerGuards};
use timely::worker::Worker;
use timely::CommunicationConfig;

use super::watch::Watch;
use crate::common::Error;

/// The timely cluster settings, as clap arguments (flatten into a program's own).
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    /// Worker threads per process.
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    pub workers: usize,
    /// Number of processes.
    #[arg(short = 'n', long = "processes", default_value_t = 1)]
    pub processes: usize,
    /// Index of this process (0-based).
    #[arg(short = 'p', long = "process", default_value_t = 0)]
    pub process: usize,
    /// File with one `host:port` line per process (timely's hostfile).
    #[arg(long = "hostfile")]
    pub hostfile: Option<PathBuf>,
    /// Seconds the processes wait for each other at start-up.
    #[arg(long = "connect-timeout-s", default_value_t = 60.0)]
    pub connect_timeout_s: f64,
    /// Seconds a process waits on another that has gone silent (stopped,
    /// frozen) before giving up on the run.
    #[arg(long = "stall-timeout-s", default_value_t = 60.0)]
    pub stall_timeout_s: f64,
    /// The program's own settings every process must share, one
    /// `--flag value` each ([`ClusterArgs::agree`]); compared with the other
    /// processes' at start-up.
    #[arg(skip)]
    pub agreed: Vec<String>,
}

impl Default for ClusterArgs {
    fn default() -> Self {
        ClusterArgs {
            workers: 1,
            processes: 1,
            process: 0,
            hostfile: None,
            connect_timeout_s: 60.0,
            stall_timeout_s: 60.0,
            agreed: Vec::new(),
        }
    }
}

impl ClusterArgs {
    /// `workers` threads in this one process.
    pub fn threads(workers: usize) -> Self {
        ClusterArgs {
            workers,
            ..ClusterArgs::default()
        }
    }

    /// Total number of workers in the cluster.
    pub fn total_workers(&self) -> usize {
        self.workers * self.processes
    }

    /// Runs `func` on every worker of this process, as `timely::execute`
    /// does, but for several processes connects them itself: waiting at
    /// most `--connect-timeout-s` for the others (saying once, on stderr,
    /// which it awaits), and refusing to start when they were given
    /// different cluster settings. While the run lasts, a process that
    /// loses another, or hears nothing from it for `--stall-timeout-s`,
    /// ends with one line naming it.
    pub fn execute<T, F>(&self, func: F) -> Result<Running<T>, Error>
    where
        T: Send + 'static,
        F: Fn(&mut Worker) -> T + Send + Sync + 'static,
    {
        let config = self.config()?;
        let CommunicationConfig::Cluster {
            threads,
            process,
            addresses,
            ..
        } = config.communication
        else {
            let guards = timely::execute(config, func).map_err(Error::Runtime)?;
            return Ok(Running { guards, watch: None });
        };
        let seconds = |flag: &str, value: f64| {
            if value > 0.0 && value.is_finite() {
                Ok(Duration::from_secs_f64(value))
            } else {
                Err(Error::invalid(
                    flag,
                    format!("{value} is not a positive number of seconds"),
                ))
            }
        };
        let timeout = seconds("--connect-timeout-s", self.connect_timeout_s)?;
        let stall = seconds("--stall-timeout-s", self.stall_timeout_s)?;
        let Links { data, watch } = connect(&addresses, process, &self.fingerprint(), timeout)?;
        let hooks = Hooks::default();
        let allocators = ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone());
        let (builders, guard) = initialize_networking_from_sockets(allocators, data, process, threads, hooks)
            .map_err(|e| Error::Runtime(format!("networking: {e}")))?;
        let watch = Watch::start(process, addresses, watch, stall);
        let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
        let guards =
            timely::execute::execute_from(builders, Box::new(guard), config.worker, func).map_err(Error::Runtime)?;
        Ok(Running {
            guards,
            watch: Some(watch),
        })
    }

    /// Adds a setting every process must share: started with different
    /// values, the processes refuse to run, naming it.
    pub fn agree(&mut self, flag: &str, value: impl std::fmt::Debug) {
        self.agreed.push(format!("{flag} {value:?}"));
    }

    /// The settings every process of a cluster must share, one per line.
    fn fingerprint(&self) -> String {
        let cluster = [format!("-w {}", self.workers), format!("-n {}", self.processes)];
        cluster
            .iter()
            .chain(&self.agreed)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The timely configuration these settings describe.
    pub fn config(&self) -> Result<timely::Config, Error> {
        if self.workers == 0 {
            return Err(Error::invalid("--workers", "must be at least 1"));
        }
        if self.processes == 0 {
            return Err(Error::invalid("--processes", "must be at least 1"));
        }
        if self.process >= self.processes {
            return Err(Error::invalid(
                "--process",
                format!("{} is not below --processes {}", self.process, self.processes),
            ));
        }
        let communication = if self.processes > 1 {
            let addresses = match &self.hostfile {
                Some(path) => read_hostfile(path, self.processes)?,
                None => (0..self.processes)
                    .map(|index| format!("localhost:{}", 2101 + index))
                    .collect(),
            };
            CommunicationConfig::Cluster {
                threads: self.workers,
                process: self.process,
                addresses,
                report: false,
                zerocopy: false,
            }
        } else if self.workers > 1 {
            CommunicationConfig::Process(self.workers)
        } else {
            CommunicationConfig::Thread
        };
        Ok(timely::Config {
            communication,
            worker: timely::WorkerConfig::default(),
        })
    }
}

/// The workers of this process at work, and the watch on the others.
pub struct Running<T: Send + 'static> {
    guards: WorkerGuards<T>,
    watch: Option<Watch>,
}

impl<T: Send + 'static> Running<T> {
    /// Waits for every worker of this process; what each returned, or why
    /// it failed.
    pub fn join(self) -> Vec<Result<T, String>> {
        let outcomes = self.guards.join();
        if let Some(watch) = self.watch {
            watch.finish();
        }
        outcomes
    }
}

/// The connections to the other processes (`None` at this one's index).
struct Links {
    /// Timely's.
    data: Vec<Option<TcpStream>>,
    /// The [`Watch`]'s heartbeats.
    watch: Vec<Option<TcpStream>>,
}

/// Connects this process (`me`) to every other, twice (timely's data and
/// the watch's heartbeats), as timely would: to each lower-numbered one by
/// connecting, from each higher-numbered one by accepting. On each
/// connection the two exchange their indices and settings. Waits until
/// `timeout` at most.
fn connect(addresses: &[String], me: usize, fingerprint: &str, timeout: Duration) -> Result<Links, Error> {
    let deadline = Instant::now() + timeout;
    let failed = |reason: String| Error::Cluster(format!("process {me} at {}: {reason}", addresses[me]));
    let listener = TcpListener::bind(&addresses[me]).map_err(|e| failed(format!("cannot listen: {e}")))?;
    listener.set_nonblocking(true).map_err(|e| failed(e.to_string()))?;
    let none = || (0..addresses.len()).map(|_| None).collect::<Vec<Option<TcpStream>>>();
    let mut links = [none(), none()];
    let list = |missing: &[usize]| {
        let named: Vec<String> = missing.iter().map(|&p| format!("{p} at {}", addresses[p])).collect();
        named.join(", ")
    };
    let mut said = false;
    let mut waiting = |missing: &[usize]| {
        if !said {
            eprintln!("process {me}: waiting for process {}", list(missing));
            said = true;
        }
    };
    let late = |missing: &[usize]| {
        failed(format!(
            "process {} did not connect within {} s (--connect-timeout-s)",
            list(missing),
            timeout.as_secs_f64()
        ))
    };
    for peer in 0..me {
        for (channel, link) in links.iter_mut().enumerate() {
            let mut stream = loop {
                match TcpStream::connect(&addresses[peer]) {
                    Ok(stream) => break stream,
                    Err(_) if Instant::now() < deadline => {
                        waiting(&[peer]);
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    Err(_) => return Err(late(&[peer])),
                }
            };
            handshake(&mut stream, (me, channel), Some(peer), fingerprint, deadline).map_err(&failed)?;
            link[peer] = Some(stream);
        }
    }
    loop {
        let missing: Vec<usize> = (me + 1..addresses.len())
            .filter(|&p| links.iter().any(|link| link[p].is_none()))
            .collect();
        if missing.is_empty() {
            break;
        }
        match listener.accept() {
            Ok((mut stream, _)) => {
                stream.set_nonblocking(false).map_err(|e| failed(e.to_string()))?;
                let (peer, channel) = handshake(&mut stream, (me, 0), None, fingerprint, deadline).map_err(&failed)?;
                let slot = links
                    .get_mut(channel)
                    .and_then(|link| link.get_mut(peer))
                    .filter(|slot| peer > me && slot.is_none());
                let Some(slot) = slot else {
                    return Err(failed(format!(
                        "an unexpected connection claiming to be process {peer}"
                    )));
                };
                *slot = Some(stream);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(late(&missing));
                }
                waiting(&missing);
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(failed(e.to_string())),
        }
    }
    // Timely's own connect sets TCP_NODELAY; without it Nagle's algorithm
    // holds each small message back until the peer's delayed ACK (40 ms on
    // Linux), and a job waiting on round trips crawls.
    for stream in links.iter().flatten().flatten() {
        stream
            .set_nodelay(true)
            .map_err(|e| failed(format!("TCP_NODELAY: {e}")))?;
    }
    let [data, watch] = links;
    Ok(Links { data, watch })
}

/// Sends this process's index, the connection's channel (0: timely's, 1:
/// the watch's) and the settings, and reads the peer's; returns the peer's
/// index and channel. `expected`: the peer this process connected to.
fn handshake(
    stream: &mut TcpStream,
    (me, channel): (usize, usize),
    expected: Option<usize>,
    fingerprint: &str,
    deadline: Instant,
) -> Result<(usize, usize), String> {
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    stream.set_read_timeout(Some(remaining)).map_err(|e| e.to_string())?;
    let mut message = (me as u64).to_be_bytes().to_vec();
    message.extend((channel as u64).to_be_bytes());
    message.extend((fingerprint.len() as u64).to_be_bytes());
    message.extend(fingerprint.as_bytes());
    stream.write_all(&message).map_err(|e| e.to_string())?;
    let mut word = [0u8; 8];
    let mut read_word = |stream: &mut TcpStream| -> Result<u64, String> {
        stream
            .read_exact(&mut word)
            .map_err(|e| format!("a peer's handshake failed: {e}"))?;
        Ok(u64::from_be_bytes(word))
    };
    let peer = read_word(stream)? as usize;
    let channel = read_word(stream)? as usize;
    let length = read_word(stream)? as usize;
    if length > 1 << 24 {
        return Err(format!(
            "a peer sent a {length}-byte handshake: not an equipoise process?"
        ));
    }
    let mut theirs = vec![0u8; length];
    stream
        .read_exact(&mut theirs)
        .map_err(|e| format!("a peer's handshake failed: {e}"))?;
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    if expected.is_some_and(|expected| expected != peer) {
        return Err(format!("the process at that address says it is process {peer}"));
    }
    let theirs = String::from_utf8_lossy(&theirs);
    if let Some((mine, other)) = fingerprint.lines().zip(theirs.lines()).find(|(a, b)| a != b) {
        return Err(format!(
            "process {peer} was started with `{other}`, this one with `{mine}`: every process needs the same settings"
        ));
    }
    Ok((peer, channel))
}

/// The first `processes` addresses of a hostfile (blank lines skipped),
/// each checked up front: a `host:port` that resolves, no address twice.
/// Timely would otherwise retry an unparsable address forever in the other
/// processes, and name neither file nor line in the process that owns it.
fn read_hostfile(path: &PathBuf, processes: usize) -> Result<Vec<String>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let bad = |line: usize, reason: String| Error::Line {
        path: path.clone(),
        line,
        reason,
    };
    let mut addresses: Vec<(usize, String)> = Vec::with_capacity(processes);
    for (index, line) in text.lines().enumerate() {
        let (number, address) = (index + 1, line.trim());
        if address.is_empty() {
            continue;
        }
        if addresses.len() == processes {
            break;
        }
        if let Err(error) = address.to_socket_addrs() {
            return Err(bad(number, format!("`{address}` is not a host:port address ({error})")));
        }
        if let Some((first, _)) = addresses.iter().find(|(_, seen)| seen == address) {
            return Err(bad(
                number,
                format!("`{address}` is also on line {first}: each process needs its own"),
            ));
        }
        addresses.push((number, address.to_owned()));
    }
    if addresses.len() < processes {
        return Err(bad(
            text.lines().count(),
            format!("only {} addresses for --processes {}", addresses.len(), processes),
        ));
    }
    Ok(addresses.into_iter().map(|(_, address)| address).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostfile(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("equipoise-cluster-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn hostfiles_are_checked_up_front_with_file_and_line() {
        let good = hostfile("good.txt", "127.0.0.1:2101\n\n127.0.0.1:2102\n127.0.0.1:2103\n");
        assert_eq!(read_hostfile(&good, 2).unwrap(), ["127.0.0.1:2101", "127.0.0.1:2102"]);
        for (name, text, processes, expected) in [
            (
                "port.txt",
                "127.0.0.1:2101\n127.0.0.1:99999\n",
                2,
                ":2: `127.0.0.1:99999` is not a host:port",
            ),
            (
                "noport.txt",
                "127.0.0.1\n127.0.0.1:2102\n",
                2,
                ":1: `127.0.0.1` is not a host:port",
            ),
            (
                "twice.txt",
                "127.0.0.1:2101\n\n127.0.0.1:2101\n",
                2,
                ":3: `127.0.0.1:2101` is also on line 1",
            ),
            ("short.txt", "127.0.0.1:2101\n", 2, "only 1 addresses for --processes 2"),
        ] {
            let path = hostfile(name, text);
            let error = read_hostfile(&path, processes).unwrap_err().to_string();
            assert!(
                error.contains(&path.display().to_string()) && error.contains(expected),
                "{name}: {error}"
            );
        }
    }
}
