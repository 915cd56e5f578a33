//! The lab's error type: what the library refuses, and what running an
//! experiment can meet (files, lines, the runtime, the cluster); every
//! variant says what was wrong and where.

use std::fmt;
use std::path::PathBuf;

/// What went wrong, with enough context (file, line, value) to fix it.
#[derive(Debug)]
pub enum Error {
    /// A file could not be opened or read.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A line of an input file is malformed.
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Why the line was rejected.
        reason: String,
    },
    /// An option, setting or parameter has a value that cannot be used
    /// (the library's error, or the lab's own of the same kind).
    Invalid(equipoise::common::Error),
    /// The timely runtime failed to start or a worker failed.
    Runtime(String),
    /// The processes of a cluster could not be connected.
    Cluster(String),
}

impl Error {
    /// An `Invalid` error for option `what`.
    pub fn invalid(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Invalid(equipoise::common::Error::invalid(what, reason))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            Error::Line { path, line, reason } => {
                write!(f, "{}:{}: {}", path.display(), line, reason)
            }
            Error::Invalid(error) => error.fmt(f),
            Error::Runtime(message) => write!(f, "timely runtime: {message}"),
            Error::Cluster(message) => write!(f, "cluster: {message}"),
        }
    }
}

impl From<equipoise::common::Error> for Error {
    fn from(error: equipoise::common::Error) -> Self {
        Error::Invalid(error)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
