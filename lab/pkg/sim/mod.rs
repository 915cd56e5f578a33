//! The replay simulator of the PKG papers: key streams routed by S sources
//! into n workers under every scheme, side by side, with the same routing
//! code as the pacts.

pub mod greedy;
pub mod plot;
pub mod replay;
pub mod stream;

pub use replay::{replay, Outcome, SimScheme, Split};
pub use stream::Dataset;
