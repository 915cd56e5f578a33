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
mod key;
mod pact;
mod partial_key;
mod potc;
mod ranking;
mod scheme;
mod shuffle;
mod space_saving;
mod top_k;

pub use aggregate::{Aggregate, AggregationKey, MergePartials, PkgCount};
pub use candidates::{least_loaded, two_choices};
#[cfg(feature = "differential")]
pub use differential::PkgCountCollection;
pub use events::{PkgEvent, PkgEventBuilder, DEFAULT_LOG_PERIOD, LOG_NAME};
pub use grouping::{Grouping, HeadKey, Router, SendCounts};
pub use head_aware::{HeadAware, HeadAwareRouter, HeadSpread, DEFAULT_SAMPLING, DEFAULT_SKETCH};
pub use head_shape::{head_choices, HeadShape};
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
pub use space_saving::{Counter, SpaceSaving};
pub use top_k::TopK;

/// The fingerprint PKG's pacts expect of a key, for keys that have no
/// well-mixed 64-bit hash of their own.
pub use crate::common::hash::key_hash;
