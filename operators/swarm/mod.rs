//! SWARM (Daghistani et al., ACM TSAS 2021): adaptive spatial partitioning
//! as a timely operator.
//!
//! `records.swarm::<App>(&config, policy)` ([`Swarm`]) routes points and
//! continuous queries to spatial partitions owned by workers, runs the
//! per-partition application `App` ([`PartitionState`]: [`RangeQueries`] and
//! [`SpatioTextual`] are built in) and returns its results as a stream, at
//! each point's epoch. A coordinator moves, splits and merges partitions as
//! the load moves, by the cost model of the [`SwarmConfig`]; migrations lose
//! and duplicate nothing. Records are valid by construction ([`Record`]).
//!
//! The pure algorithms know nothing of timely and are public for those who
//! build on them: geometry ([`geometry`]), the grid index with point routing
//! and range routing by Algorithm 1 ([`index`]), partition ids ([`ids`]),
//! per-partition row/column statistics with the round-end update of
//! Algorithm 2 and the split and merge arithmetic ([`stats`]), the cost
//! model ([`cost`]), the five-stage and threshold decisions ([`decision`]),
//! and the reduction (Algorithm 3) and merge planning ([`rebalance`],
//! [`merge`]). What the paper's text leaves out is ours (`docs/swarm.md`),
//! behind traits ([`CostModel`], [`DecisionPolicy`]).
//!
//! ```
//! use equipoise::swarm::cost::{normalized, CostModel, RangeQueryCost, WorkerLoad};
//! use equipoise::swarm::geometry::{Cell, Grid, OutOfBounds, Rect};
//! use equipoise::swarm::index::GlobalIndex;
//! use equipoise::swarm::rebalance::{plan_reduction, Candidate, Reduction, ReductionRequest};
//! use equipoise::swarm::stats::PartitionStats;
//!
//! // A 100 × 100 space in 16 × 16 cells, initially one partition per worker.
//! let grid = Grid::new(Rect::new(0.0, 0.0, 100.0, 100.0)?, 16, 16)?;
//! let (index, _first_free_id) = GlobalIndex::initial(grid, 4)?;
//! let (partition, owner) = index.route_point(12.5, 80.0, OutOfBounds::Reject)?;
//! let cells = index.grid().cells_of(&Rect::new(10.0, 10.0, 60.0, 20.0)?, OutOfBounds::Reject)?;
//! let overlapping = index.partitions_overlapping(&cells); // Algorithm 1
//! assert_eq!(overlapping, index.partitions_overlapping_by_scan(&cells));
//!
//! // Statistics of that partition over a round, and what it costs.
//! let rect = index.info(partition).unwrap().rect;
//! let mut stats = PartitionStats::new(rect.rows(), rect.cols());
//! for i in 0..100 {
//!     stats.record_point(Cell { row: i % rect.rows(), col: 0 });
//! }
//! stats.end_round();
//! let model = RangeQueryCost::default();
//! let load = WorkerLoad::of(&model, [&stats.totals()]);
//! assert_eq!(load.received, 100.0);
//!
//! // Asked to shed load toward an idle worker, its only partition is split
//! // and one part moves.
//! let request = ReductionRequest { low_cost: 0.0, system_received: load.received, margin: 0.05 };
//! let plan = plan_reduction(&model, &request, &[Candidate { id: partition, rect, stats: &stats }]);
//! assert!(matches!(plan, Reduction::Split { .. }), "{plan:?}");
//! # let _ = (owner, normalized(load.work, load.received));
//! # Ok::<(), equipoise::common::Error>(())
//! ```

pub mod app;
#[cfg(feature = "lab")]
pub mod cli;
pub(crate) mod coordination;
pub mod coordinator;
pub mod cost;
pub mod decision;
pub(crate) mod dispatch;
pub(crate) mod executor;
pub mod forced;
pub mod geometry;
pub mod granularity;
pub mod ids;
pub mod index;
#[cfg(feature = "lab")]
pub mod input;
#[cfg(feature = "lab")]
pub mod job;
pub mod merge;
pub(crate) mod operator;
pub mod plan;
pub mod rebalance;
pub(crate) mod record;
pub mod stats;
pub(crate) mod store;
pub mod textual;
#[cfg(feature = "lab")]
pub mod workload;

pub use app::{Match, PartitionState, Point, Query, RangeQueries, Registered};
pub use coordinator::{Orders, Policy};
pub use cost::{CostModel, RangeQueryCost};
pub use decision::{DecisionPolicy, FiveStage, Threshold};
pub use dispatch::Refused;
pub use executor::ExecutorFigures;
pub use geometry::{Grid, OutOfBounds, Rect};
pub use operator::{InitialPlan, Swarm, SwarmConfig, SwarmHandles};
pub use record::{Item, Record};
pub use stats::Totals;
pub use textual::{Keywords, SpatioTextual, TextualCost};

pub use crate::common::Error;
