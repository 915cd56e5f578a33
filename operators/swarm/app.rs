//! The application contract: what an application keeps per partition
//! ([`PartitionState`]), fed the points and queries SWARM routes.

use timely::ExchangeData;

use super::geometry::{Cell, CellRect};
pub use super::objects::{Point, Query};
use super::query_store::Registered;
use super::stats::QueryAge;

/// Per-partition application state. SWARM creates it empty, feeds it the
/// partition's queries, removals and points (in that order within an
/// epoch), splits and merges it with the partition, and moves it between
/// workers (serialized with serde, so the state and its payloads derive
/// `Serialize` and `Deserialize`) when the partition moves. Statistics stay
/// SWARM's own.
///
/// An application keeps its queries in a [`Registered`], which files each
/// by the cells it overlaps, and says how a point is evaluated; everything
/// else (registration, removal, split, merge, the cells for statistics,
/// the bytes moved) has a default built on [`registered`](Self::registered).
/// Override those only when the state holds more than its queries.
///
/// ```
/// use equipoise::swarm::{PartitionState, Point};
/// use equipoise::swarm::plan::{Cell, Registered};
/// use serde::{Deserialize, Serialize};
///
/// /// Circles: a query's payload is its radius around the rectangle's centre.
/// #[derive(Debug, Clone, Default, Serialize, Deserialize)]
/// struct Circles {
///     queries: Registered<f64>,
/// }
///
/// impl PartitionState for Circles {
///     type Point = ();
///     type Query = f64;
///     type Output = (u64, u64);
///
///     fn registered(&self) -> &Registered<f64> {
///         &self.queries
///     }
///
///     fn registered_mut(&mut self) -> &mut Registered<f64> {
///         &mut self.queries
///     }
///
///     fn evaluate(&mut self, point: &Point, cell: Cell, emit: &mut dyn FnMut((u64, u64))) -> u64 {
///         // Only queries overlapping the point's cell (in a crowded cell,
///         // its part of the cell) are looked at: the rectangle bounds the circle.
///         self.queries.for_each_candidate(cell, point.x, point.y, |query| {
///             let (cx, cy) = ((query.rect.x1 + query.rect.x2) / 2.0, (query.rect.y1 + query.rect.y2) / 2.0);
///             if (point.x - cx).hypot(point.y - cy) <= query.data {
///                 emit((query.id, point.id));
///             }
///         })
///     }
/// }
/// ```
pub trait PartitionState: Default + Clone + ExchangeData {
    /// What a point carries besides its position.
    type Point: Clone + ExchangeData;
    /// What a query carries besides its rectangle.
    type Query: Clone + ExchangeData;
    /// What evaluating a point emits into SWARM's output stream.
    type Output: Clone + 'static;

    /// The queries held.
    fn registered(&self) -> &Registered<Self::Query>;

    /// The queries held, to change.
    fn registered_mut(&mut self) -> &mut Registered<Self::Query>;

    /// Evaluates a point that lies in `cell`: emits its results and returns
    /// how many point–query checks it made (the work the cost model prices).
    fn evaluate(&mut self, point: &Point<Self::Point>, cell: Cell, emit: &mut dyn FnMut(Self::Output)) -> u64;

    /// Registers `query` (a copy of it, for this partition), which overlaps
    /// `cells` of the partition, in round `round`.
    fn add_query(&mut self, query: Query<Self::Query>, cells: CellRect, round: u64) {
        self.registered_mut().add(query, cells, round);
    }

    /// Removes the query `id`; whether this partition held it.
    fn remove_query(&mut self, id: u64) -> bool {
        self.registered_mut().remove(id)
    }

    /// Splits into the states of two parts (a query overlapping both parts
    /// goes to both). The default splits the queries; any other state stays
    /// with the first part.
    fn split(mut self, first: &CellRect, second: &CellRect) -> (Self, Self) {
        let (a, b) = std::mem::take(self.registered_mut()).split(first, second);
        let mut other = Self::default();
        *self.registered_mut() = a;
        *other.registered_mut() = b;
        (self, other)
    }

    /// Merges the state of an adjacent partition, or of another holder of
    /// the same shared partition leaving it (a query held by both is kept
    /// once). The default merges the queries.
    fn merge(&mut self, mut other: Self) {
        let theirs = std::mem::take(other.registered_mut());
        self.registered_mut().merge(theirs);
    }

    /// The state a new holder of this partition starts from when it is
    /// shared ([`PlanChange::Share`](super::plan::PlanChange::Share)): a copy of
    /// its queries, as each point is dealt to one holder and met there.
    /// The default copies the queries; any other state stays here, as it
    /// stays with a split's first part.
    fn replica(&self) -> Self {
        let mut replica = Self::default();
        *replica.registered_mut() = self.registered().clone();
        replica
    }

    /// The stored queries' cells (clipped to `within`, relative to it) and
    /// ages, for rebuilding statistics at the end of round `round`.
    fn query_cells(&self, within: &CellRect, round: u64) -> Vec<(CellRect, QueryAge)> {
        self.registered().query_cells(within, round)
    }

    /// Bytes the state takes when moved.
    fn moved_bytes(&self) -> usize {
        self.registered().moved_bytes()
    }
}
