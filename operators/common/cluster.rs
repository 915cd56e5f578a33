//! timely's own flags (`-w`, `-n`, `-p`, `--hostfile`) for programs that parse
//! the rest of their command line with clap.
//!
//! `timely::execute_from_args` parses with getopts and rejects any flag it does
//! not know, so equipoise's programs parse these themselves and build the
//! `timely::Config`.

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

fn read_hostfile(path: &PathBuf, processes: usize) -> Result<Vec<String>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let addresses: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .take(processes)
        .map(str::to_owned)
        .collect();
    if addresses.len() < processes {
        return Err(Error::Line {
            path: path.clone(),
            line: text.lines().count(),
            reason: format!("only {} addresses for --processes {}", addresses.len(), processes),
        });
    }
    Ok(addresses)
}
