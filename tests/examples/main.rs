//! The example programs' command lines, one test binary for them all: each
//! module runs an example's binary (one process, and two processes with a
//! hostfile on 127.0.0.1) and checks its report against a reference run or
//! an independent count. The library's own behaviour is tested in the other
//! test files, on dataflows they build.

#[path = "../support/mod.rs"]
mod support;

mod differential;
mod doctor;
mod spatial;
mod wordcount;
