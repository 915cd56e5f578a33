//! SWARM's experiments: the spatial job and its command line, input files
//! and workload generators.

pub mod cli;
pub mod forced;
pub mod input;
pub mod job;
pub mod places;
pub mod shape;
pub mod workload;
