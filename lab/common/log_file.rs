//! The examples' `--log FILE`: the operators' timely log events written as
//! JSON, one object a line.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use timely::container::CapacityContainerBuilder;
use timely::worker::Worker;

use super::cluster::ClusterArgs;
use crate::common::Error;

/// A file the workers of this process log to. Clones share it.
#[derive(Clone)]
pub struct LogFile {
    path: PathBuf,
    writer: Arc<Mutex<BufWriter<File>>>,
}

impl std::fmt::Debug for LogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFile").field("path", &self.path).finish()
    }
}

/// One line of the file.
#[derive(Serialize)]
struct Line<'a, E> {
    /// Seconds since the worker's logging began (timely's log time).
    time_s: f64,
    /// The logger's name.
    log: &'a str,
    event: &'a E,
}

impl LogFile {
    /// The file of a `--log` flag, if given, for this process of `cluster`.
    pub fn for_flag(path: Option<&Path>, cluster: &ClusterArgs) -> Result<Option<Self>, Error> {
        path.map(|path| LogFile::create(path, cluster.process, cluster.processes))
            .transpose()
    }

    /// Creates `path` for process `process` of `processes` (with several,
    /// each writes `path.<process>`, so that processes on one machine do
    /// not write over each other).
    fn create(path: &Path, process: usize, processes: usize) -> Result<Self, Error> {
        let path = if processes > 1 {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".{process}"));
            PathBuf::from(name)
        } else {
            path.to_owned()
        };
        let file = File::create(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        Ok(LogFile {
            path,
            writer: Arc::new(Mutex::new(BufWriter::new(file))),
        })
    }

    /// Registers, on `worker`, a logger named `name` whose events of type
    /// `E` go to the file. Call it before building the dataflow whose
    /// operators log there.
    pub fn register<E: Serialize + 'static>(&self, worker: &mut Worker, name: &'static str) {
        let Some(mut registry) = worker.log_register() else {
            return;
        };
        let (writer, path) = (Arc::clone(&self.writer), self.path.clone());
        registry.insert::<CapacityContainerBuilder<Vec<(Duration, E)>>, _>(name, move |_, batch| {
            let mut writer = writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let written = match batch {
                Some(batch) => batch.drain(..).try_for_each(|(time, event)| {
                    let line = Line {
                        time_s: time.as_secs_f64(),
                        log: name,
                        event: &event,
                    };
                    serde_json::to_writer(&mut *writer, &line).map_err(std::io::Error::from)?;
                    writer.write_all(b"\n")
                }),
                None => writer.flush(),
            };
            // A log that cannot be written must not end the run: say so once a batch.
            if let Err(error) = written {
                eprintln!("--log {}: {error}", path.display());
            }
        });
    }
}
