//! Partial Key Grouping (Nasir et al., ICDE 2015): exchange pacts that split
//! each key over two workers and pick the less loaded by a load estimate each
//! sender keeps locally, baselines for honest comparison, and the two-phase
//! aggregation operators that merge the split results exactly. For streams
//! whose hottest key outgrows two workers, D-Choices and W-Choices (ICDE
//! 2016); and the replay simulator that reproduces the papers' results.

pub mod aggregate;
pub mod candidates;
pub mod differential;
pub mod greedy;
pub mod head_aware;
pub mod head_shape;
pub mod key;
pub mod pact;
pub mod partial_key;
pub mod potc;
pub mod ranking;
pub mod router;
pub mod shuffle;
#[cfg(feature = "lab")]
pub mod sim;
pub mod space_saving;
pub mod top_k;
#[cfg(feature = "lab")]
pub mod wordcount;

pub use aggregate::{Aggregate, MergePartials, PkgCount};
pub use differential::PkgCountCollection;
pub use head_aware::{HeadAware, HeadSpread};
pub use key::Key;
pub use pact::{
    Grouped, HeadAwareGrouping, KeyGrouping, PartialKeyGrouping, PotcGrouping, SchemeGrouping, SendCounts,
    ShuffleGrouping,
};
pub use partial_key::Pkg;
pub use potc::Potc;
pub use router::{Grouping, Router, Scheme};
pub use shuffle::Shuffle;
pub use top_k::TopK;
