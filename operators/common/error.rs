//! The error type of equipoise: what the library refuses, naming the
//! setting or value and why.

use std::fmt;

/// A setting or value the library cannot use, named with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An option, setting or parameter has a value that cannot be used.
    Invalid {
        /// The option, setting or parameter.
        what: String,
        /// Why its value is rejected.
        reason: String,
    },
}

impl Error {
    /// An `Invalid` error for `what`.
    pub fn invalid(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Invalid {
            what: what.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid { what, reason } => write!(f, "invalid {what}: {reason}"),
        }
    }
}

impl std::error::Error for Error {}
