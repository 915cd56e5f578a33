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
pub mod hashing;
pub mod head;
pub mod heavy_hitters;
pub mod pact;
pub mod potc;
pub mod ranking;
pub mod round_robin;
pub mod router;
#[cfg(feature = "lab")]
pub mod sim;
pub mod space_saving;
pub mod top_k;
pub mod two_choices;
#[cfg(feature = "lab")]
pub mod wordcount;

pub use aggregate::{Aggregate, MergePartials, PkgCount};
pub use differential::PkgCountCollection;
pub use pact::{
    Grouped, HeadAwareGrouping, KeyGrouping, PartialKeyGrouping, PotcGrouping, SchemeGrouping, SendCounts,
    ShuffleGrouping,
};
pub use router::{Grouping, Router, Scheme};
pub use top_k::TopK;
