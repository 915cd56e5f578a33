//! Partial Key Grouping (Nasir et al., ICDE 2015): exchange pacts that split
//! each key over two workers and pick the less loaded by a load estimate each
//! sender keeps locally, baselines for honest comparison, and the two-phase
//! aggregation operators that merge the split results exactly. For streams
//! whose hottest key outgrows two workers, D-Choices and W-Choices (ICDE
//! 2016).

mod aggregate;
mod candidates;
#[cfg(feature = "differential")]
mod differential;
mod events;
mod grouping;
mod head_aware;
mod head_index;
mod head_shape;
#[cfg(feature = "differential")]
mod hot_keys;
mod key;
#[cfg(feature = "differential")]
mod key_filter;
mod pact;
mod partial_key;
mod potc;
mod ranking;
mod scheme;
mod shuffle;
#[cfg(feature = "differential")]
mod skew_combine;
#[cfg(feature = "differential")]
mod skew_events;
#[cfg(feature = "differential")]
mod skew_extremes;
#[cfg(feature = "differential")]
mod skew_join;
#[cfg(feature = "differential")]
mod skew_reduce;
#[cfg(feature = "differential")]
mod skew_route;
mod space_saving;
#[cfg(feature = "differential")]
mod strides;
mod top_k;

pub use aggregate::{Aggregate, AggregationKey, MergePartials, PkgCount};
pub use candidates::{least_loaded, two_choices};
#[cfg(feature = "differential")]
pub use differential::PkgCountCollection;
pub use events::{PkgEvent, PkgEventBuilder, DEFAULT_LOG_PERIOD, LOG_NAME};
pub use grouping::{Grouping, HeadKey, Router, SendCounts};
pub use head_aware::{HeadAware, HeadAwareRouter, HeadSpread, DEFAULT_SAMPLING, DEFAULT_SKETCH};
pub use head_shape::{head_choices, HeadShape};
#[cfg(feature = "differential")]
pub use hot_keys::Skew;
pub use key::{Key, KeyRouter};
pub use pact::{
    Grouped, GroupedPusher, HeadAwareGrouping, KeyGrouping, PartialKeyGrouping, PotcGrouping, SchemeGrouping,
    ShuffleGrouping,
};
pub use partial_key::{less_loaded, Pkg, PkgRouter};
pub use potc::{Potc, PotcRouter};
pub use ranking::top_of;
pub use scheme::{Scheme, SchemeRouter, SlackScheme};
pub use shuffle::{Shuffle, ShuffleRouter};
#[cfg(feature = "differential")]
pub use skew_events::{SkewEvent, SkewEventBuilder, SKEW_LOG_NAME};
#[cfg(feature = "differential")]
pub use skew_extremes::SkewMinMax;
#[cfg(feature = "differential")]
pub use skew_join::{Joined, SkewJoin};
#[cfg(feature = "differential")]
pub use skew_reduce::SkewReduce;
pub use space_saving::{Counter, SpaceSaving};
pub use top_k::TopK;

/// The fingerprint PKG's pacts expect of a key, for keys that have no
/// well-mixed 64-bit hash of their own.
pub use crate::common::hash::key_hash;
