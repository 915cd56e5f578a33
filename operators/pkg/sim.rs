//! For simulators and experiments: the groupings' routing decisions
//! without a dataflow. Each grouping's router (one per sender, as its pact
//! runs it), the candidate and choice rules they share, D-Choices' rule for
//! d, the SpaceSaving sketch that finds a sender's head, and top-k ranking.

pub use super::candidates::{least_loaded, two_choices};
pub use super::grouping::{Grouping, HeadKey, Router, SendCounts};
pub use super::head_aware::{HeadAwareRouter, DEFAULT_SAMPLING, DEFAULT_SKETCH};
pub use super::head_shape::{head_choices, HeadShape};
pub use super::key::KeyRouter;
pub use super::partial_key::{less_loaded, PkgRouter};
pub use super::potc::PotcRouter;
pub use super::ranking::top_of;
pub use super::scheme::SchemeRouter;
pub use super::shuffle::ShuffleRouter;
pub use super::space_saving::{Counter, SpaceSaving};
