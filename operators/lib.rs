//! # equipoise
//!
//! Timely-dataflow (and differential-dataflow) operators that keep a
//! distributed streaming dataflow balanced, and inside its latency target,
//! when its input is skewed or too fast.
//!
//! - [`pkg`]: Partial Key Grouping. Exchange pacts that split each key over
//!   two workers, choosing the less loaded by a load estimate each sender keeps
//!   locally, with key grouping, shuffle and PoTC baselines; two-phase
//!   aggregation operators (`pkg_aggregate`, `pkg_count_running`, `top_k`) that merge
//!   the split partial results exactly.
//! - [`skew`]: skew-proof differential operators, with the output of the
//!   operator each replaces and their hot keys split over workers:
//!   `skew_join`, `skew_semijoin`, `skew_antijoin`, `skew_count`,
//!   `skew_distinct`, `skew_min`, `skew_max`, `skew_reduce_associative`;
//!   in loops, `skew_arrange_by_key` (a split arrangement to enter and
//!   join with) and `skew_combine` (before a `reduce`).
//! - [`doctor`]: a skew report of any timely or differential dataflow:
//!   each operator's busiest worker over the mean, over time, where its
//!   skew comes from, the keys that make it (`sample_keys`), and a page
//!   that draws the dataflow (`Report::html`).
//! - [`swarm`]: SWARM. `records.swarm::<App>(&config, policy)` routes points
//!   and continuous queries to spatial partitions owned by workers, runs the
//!   application per partition and returns its results as a stream; a
//!   coordinator moves, splits and merges partitions as the load moves, and
//!   migrations lose and duplicate nothing. `swarm_controlled` runs the
//!   same on a plan the program orders on a control stream.
//! - [`shed`]: load shedding held at a delay target by a PI controller on the
//!   frontier-measured delay (`shed_loop`), with identification and
//!   pole-placement design (`Auto`, the default, designs its own), against
//!   the coarse algorithm; the same loop throttles a source that can wait
//!   (`Throttle`, `throttle_loop`).
//! - [`common`]: deterministic hashing, the library's error, busy work.
//!
//! Each capability's root holds what a program names: its operators, their
//! settings, handles and events. What simulators and experiments use
//! besides is in a public module of its own: [`pkg::sim`] (the routers),
//! [`swarm::plan`] (the index and the planning algorithms), [`shed::design`]
//! (identification and controller design).
//!
//! Features: `differential` (on by default) adds [`skew`] and
//! `pkg::PkgCountCollection`; `clap` derives `clap::ValueEnum` for the enums a
//! command line picks from (`Scheme`, `Actuation`, `Prediction`).
//!
//! ```
//! use timely::dataflow::operators::{ToStream, Inspect};
//! use equipoise::pkg::key_hash;
//! use equipoise::pkg::{PartialKeyGrouping, PkgCount, TopK};
//!
//! timely::execute(timely::Config::process(2), |worker| {
//!     worker.dataflow::<u64, _, _>(|scope| {
//!         let words = ["the", "cat", "the", "hat", "the"].map(String::from);
//!         words.to_stream(scope)
//!             .pkg_count_running(PartialKeyGrouping::new(|word: &String| key_hash(word)))
//!             .top_k(1)
//!             .inspect(|top| println!("most frequent: {top:?}"));
//!     });
//! }).unwrap();
//! ```

#![warn(missing_docs, unreachable_pub)]

pub mod common;
pub mod doctor;
pub mod pkg;
pub mod shed;
#[cfg(feature = "differential")]
pub mod skew;
pub mod swarm;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The PKG page's examples, compiled and run as doctests.
#[doc = include_str!("../docs/pkg.md")]
#[cfg(doctest)]
pub struct PkgDocDoctests;

/// The differential page's example, compiled and run as a doctest.
#[doc = include_str!("../docs/differential.md")]
#[cfg(all(doctest, feature = "differential"))]
pub struct DifferentialDocDoctests;

/// The shedding page's examples, compiled as doctests.
#[doc = include_str!("../docs/shedding.md")]
#[cfg(doctest)]
pub struct ShedDocDoctests;

/// The observability page's example, compiled and run as a doctest.
#[doc = include_str!("../docs/observability.md")]
#[cfg(all(doctest, feature = "differential"))]
pub struct ObservabilityDocDoctests;

/// The skew report's page's example, compiled and run as a doctest.
#[doc = include_str!("../docs/doctor.md")]
#[cfg(all(doctest, feature = "differential"))]
pub struct DoctorDocDoctests;

/// The SWARM page's examples, compiled and run as doctests.
#[doc = include_str!("../docs/swarm.md")]
#[cfg(doctest)]
pub struct SwarmDocDoctests;
