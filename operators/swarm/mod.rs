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
//! The root holds what a program names. The pure algorithms know nothing
//! of timely and are public, in submodules, for those who build on them:
//! geometry ([`Grid`], [`Rect`]), the cost model ([`cost`]:
//! [`RangeQueryCost`](cost::RangeQueryCost) and
//! [`TextualCost`](cost::TextualCost)) and the five-stage and threshold
//! decisions ([`decision`]: [`FiveStage`](decision::FiveStage),
//! [`Threshold`](decision::Threshold)). What the paper's text leaves out is
//! ours (`bench/results/swarm.md`, "What is ours"), behind traits
//! ([`CostModel`](cost::CostModel),
//! [`DecisionPolicy`](decision::DecisionPolicy)). What a run did is in
//! [`figures`], its log's events in [`events`].
//! For simulators and experiments, the plan and the algorithms that change
//! it are in [`plan`]: the grid index with point routing and range routing
//! by Algorithm 1 ([`GlobalIndex`](plan::GlobalIndex)), partition ids
//! ([`IdMint`](plan::IdMint)), per-partition row/column statistics with the
//! round-end update of Algorithm 2 and the split and merge arithmetic
//! ([`PartitionStats`](plan::PartitionStats)), and the reduction
//! (Algorithm 3, [`plan_reduction`](plan::plan_reduction)) and merge
//! planning ([`plan_merges`](plan::plan_merges)).
//!
//! ```
//! use equipoise::swarm::plan::{
//!     normalized, plan_reduction, Candidate, GlobalIndex, PartitionStats, Reduction, ReductionRequest,
//! };
//! use equipoise::swarm::cost::{CostModel, RangeQueryCost, WorkerLoad};
//! use equipoise::swarm::plan::Cell;
//! use equipoise::swarm::{Grid, OutOfBounds, Rect};
//!
//! // A 100 × 100 space in 16 × 16 cells, initially one partition per worker.
//! let grid = Grid::new(Rect::new(0.0, 0.0, 100.0, 100.0)?, 16, 16)?;
//! let (index, _first_free_id) = GlobalIndex::initial(grid, 4)?;
//! let (partition, owner) = index.route_point(12.5, 80.0, OutOfBounds::Reject)?;
//! let cells = index.grid().cells_of(&Rect::new(10.0, 10.0, 60.0, 20.0)?, OutOfBounds::Reject)?;
//! let overlapping = index.partitions_overlapping(&cells); // Algorithm 1
//! assert!(!overlapping.is_empty());
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
//! let plan = plan_reduction(&model, &request, &[Candidate { id: partition, rect, stats: &stats, holders: 1, low_holds: false }]);
//! assert!(matches!(plan, Reduction::Split { .. }), "{plan:?}");
//! # let _ = (owner, normalized(load.work, load.received));
//! # Ok::<(), equipoise::common::Error>(())
//! ```

mod app;
mod census;
mod control;
mod coordination;
mod coordinator;
pub mod cost;
pub mod decision;
mod dispatch;
pub mod events;
mod executor;
pub mod figures;
mod filing;
mod forced;
mod geometry;
mod granularity;
mod ids;
mod index;
mod merge;
mod objects;
mod opening;
mod operator;
pub mod plan;
mod plan_history;
mod query_store;
mod range_queries;
mod rebalance;
mod record;
mod spread;
mod stats;
mod store;
mod textual;

pub use app::{PartitionState, Point, Query};
pub use coordinator::Policy;
pub use events::LOG_NAME;
pub use geometry::{Grid, OutOfBounds, Rect};
pub use operator::{InitialPlan, Swarm, SwarmConfig, SwarmHandles};
pub use range_queries::{Match, RangeQueries};
pub use record::{Item, Record};
pub use textual::{Keywords, SpatioTextual};

#[doc(hidden)]
pub use crate::common::busy_work::BusyWork;
pub use crate::common::Error;
