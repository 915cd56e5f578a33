//! The lab of equipoise: what exists to run experiments with its operators
//! (jobs, workloads, generated graphs, file readers, command lines, plots, the PKG replay
//! simulator, reports, the cluster start-up of the examples). The examples,
//! benchmarks and tests use it; the library (`equipoise`) does not.

#![warn(missing_docs, unreachable_pub)]

pub mod common;
pub mod graph;
pub mod pkg;
pub mod shed;
pub mod swarm;
