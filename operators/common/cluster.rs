//! timely's own flags (`-w`, `-n`, `-p`, `--hostfile`) for programs that parse
//! the rest of their command line with clap.
//!
//! `timely::execute_from_args` parses with getopts and rejects any flag it does
//! not know, so equipoise's programs parse these themselves and build the
//! `timely::Config`.

use std::net::ToSocketAddrs;
use std::path::PathBuf;

use timely::CommunicationConfig;

use super::error::Error;

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
}

impl Default for ClusterArgs {
    fn default() -> Self {
        ClusterArgs {
            workers: 1,
            processes: 1,
            process: 0,
            hostfile: None,
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
