//! Partial Key Grouping (Nasir et al., ICDE 2015): exchange pacts that split
//! each key over two workers and pick the less loaded by a load estimate each
//! sender keeps locally, baselines for honest comparison, and the two-phase
//! aggregation operators that merge the split results exactly. For streams
//! whose hottest key outgrows two workers, D-Choices and W-Choices (ICDE
//! 2016). The routers behind the pacts, for simulators and experiments,
//! are in [`sim`].

mod aggregate;
mod candidates;
#[cfg(feature = "differential")]
mod differential;
pub mod events;
mod grouping;
mod head_aware;
mod head_index;
mod head_names;
mod head_shape;
mod key;
mod pact;
mod partial_key;
mod potc;
mod ranking;
mod scheme;
mod shuffle;
pub mod sim;
mod space_saving;
mod top_k;

pub use aggregate::{Aggregate, AggregationKey, MergePartials, PkgCount};
#[cfg(feature = "differential")]
pub use differential::PkgCountCollection;
pub use events::LOG_NAME;
pub use head_aware::{HeadAware, HeadSpread};
pub use key::Key;
pub use pact::{
    Grouped, GroupedPusher, HeadAwareGrouping, KeyGrouping, PartialKeyGrouping, PotcGrouping, SchemeGrouping,
    ShuffleGrouping,
};
pub use partial_key::Pkg;
pub use potc::Potc;
pub use scheme::{Scheme, SlackScheme};
pub use shuffle::Shuffle;
pub use top_k::TopK;

/// The fingerprint PKG's pacts expect of a key, for keys that have no
/// well-mixed 64-bit hash of their own.
pub use crate::common::hash::key_hash;
