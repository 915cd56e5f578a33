//! SWARM (Daghistani et al., ACM TSAS 2021): adaptive spatial partitioning.
//! This module holds the pure algorithms: geometry, the global grid index and
//! range routing (Algorithm 1), per-partition row/column statistics
//! (Algorithm 2), the cost model, the five-stage decision, and the reduction
//! and merge planning (Algorithm 3). None of it knows about timely.

pub mod cost;
pub mod decision;
pub mod geometry;
pub mod ids;
pub mod index;
pub mod merge;
pub mod rebalance;
pub mod stats;
