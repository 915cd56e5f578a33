//! Skew-proof differential operators: joins and reductions with the
//! signature and output of the differential operator each replaces, whose
//! hot keys are split over several workers.
//!
//! - [`SkewJoin`]: `skew_join`, `skew_join_map`, `skew_semijoin`,
//!   `skew_antijoin` in place of `join`, `join_map`, `semijoin`,
//!   `antijoin`.
//! - [`SkewReduce`]: `skew_count`, `skew_distinct` in place of `count`,
//!   `distinct`.
//! - [`SkewMinMax`]: `skew_min`, `skew_max` in place of a `reduce` to each
//!   key's least or greatest value.
//! - [`SkewAssociative`]: `skew_reduce_associative` in place of a `reduce`
//!   whose logic is associative (a sum, the top k, a union).
//! - [`SkewArrange`]: `skew_arrange_by_key` in place of `arrange_by_key`,
//!   for a [`SkewArranged`] to join with ([`SkewArranged::join`],
//!   `join_map`, `join_core`), in a loop too ([`SkewArranged::enter`]).
//! - [`SkewReduce::skew_combine`]: a combiner for before a `reduce`.
//!
//! [`Skew`] sets when a key is hot and how far a worker may be over the
//! mean; what the operators decide is logged as [`SkewEvent`]s under
//! [`LOG_NAME`].
//!
//! # Glossary
//!
//! - **owner**: the worker differential's exchange sends a key to, where
//!   every update of a key that is not hot goes.
//! - **hot key**: a key that carries at least a share of a worker's mean
//!   load ([`Skew::with_hot_share`]) on an owner over the mean by more
//!   than [`Skew::with_tolerance`]. A key once hot stays hot.
//! - **deal**: the workers a hot key's updates go to from a time on, each
//!   with its share; a key is dealt anew when its share of the updates
//!   doubles, and a join's records of the key move to the new deal's workers.
//! - **part**: the updates of a hot key one of its workers receives, by a
//!   hash of the whole record, so that a retraction meets its insertion.
//! - **side**: one input of an operator (a join has two); a hot key is
//!   split on the side with more of its updates.
//! - **copy**: an update of a hot key's other side, sent to each of the
//!   key's workers but its owner, so that every part meets all of it.
//!
//! ```
//! use differential_dataflow::input::Input;
//! use equipoise::skew::{SkewJoin, SkewReduce};
//!
//! timely::example(|scope| {
//!     // Key 0 takes half the facts.
//!     let facts = scope.new_collection_from((0..1000u64).map(|i| (if i % 2 == 0 { 0 } else { i % 10 }, i))).1;
//!     let names = scope.new_collection_from((0..10u64).map(|k| (k, format!("key {k}")))).1;
//!     facts.clone().skew_join(names.clone()).assert_eq(facts.clone().join(names));
//!     let keys = facts.map(|(key, _)| key);
//!     keys.clone().skew_count().assert_eq(keys.count());
//! });
//! ```

mod arrange;
mod associative;
mod combine;
mod deals;
mod decision;
mod events;
mod extremes;
mod hot_keys;
mod join;
mod key_index;
mod mover;
mod picker;
mod reduce;
mod route;
mod sample;
mod settings;
mod split;
mod two_level;

pub use associative::SkewAssociative;
pub use events::{SkewEvent, SkewEventBuilder, LOG_NAME};
pub use extremes::SkewMinMax;
pub use join::{Joined, SkewJoin};
pub use reduce::SkewReduce;
pub use settings::Skew;
pub use split::{SkewArrange, SkewArranged, SkewArrangedByKey, SkewArrangedEntered};
