//! For simulators and experiments: the plan and the pure algorithms that
//! change it, which know nothing of timely. The grid index with point
//! routing and range routing by Algorithm 1 ([`GlobalIndex`]), partition
//! ids ([`IdMint`]), per-partition row/column statistics with the round-end
//! update of Algorithm 2 and the split and merge arithmetic
//! ([`PartitionStats`]), the reduction (Algorithm 3, [`plan_reduction`]),
//! merge planning ([`plan_merges`]), the opening plan from epoch 0's
//! counts ([`plan_opening`]), splits that cut work ([`best_split`])
//! and the random changes of the forced schedule ([`random_change`]); the
//! plan's vocabulary: cells ([`Cell`], [`CellRect`]), partitions
//! ([`PartitionId`]), changes ([`PlanChange`], [`SplitLine`], [`Axis`]) and
//! statistics ([`Totals`], [`QueryAge`], [`Registered`]).

pub use super::coordinator::CHANGES_KEPT;
pub use super::cost::{normalized, system_received};
pub use super::forced::random_change;
pub use super::geometry::{Cell, CellRect};
pub use super::granularity::best_split;
pub use super::ids::IdMint;
pub use super::ids::PartitionId;
pub use super::index::{Axis, PlanChange, SplitLine};
pub use super::index::{GlobalIndex, PartitionInfo, FINE_PER_WORKER, SHARE_WEIGHT};
pub use super::merge::plan_merges;
pub use super::opening::{plan_opening, CellCount, OPENING_TOLERANCE};
pub use super::query_store::Registered;
pub use super::rebalance::{best_line, best_line_exhaustive, plan_reduction, Candidate, Reduction, ReductionRequest};
pub use super::stats::{LineStats, PartitionStats};
pub use super::stats::{QueryAge, Totals};
