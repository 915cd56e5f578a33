//! The application contract: the points and queries SWARM routes, and
//! what an application keeps per partition ([`PartitionState`]).

use serde::{Deserialize, Serialize};
use timely::ExchangeData;

use super::geometry::{Cell, CellRect, Rect};
use super::query_store::Registered;
use super::stats::QueryAge;

/// A data point: an id, a position, and what the application needs besides
/// (`data`: `()` for range queries, keywords for spatio-textual queries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point<P = ()> {
    /// The point's id.
    pub id: u64,
    /// x coordinate.
    pub x: f64,
    /// y coordinate.
    pub y: f64,
    /// The application's data.
    pub data: P,
}

impl Point {
    /// A point that carries nothing besides its position.
    pub fn new(id: u64, x: f64, y: f64) -> Self {
        Point { id, x, y, data: () }
    }
}

impl<P> Point<P> {
    /// A point carrying `data` (any payload; [`Point::new`] is the one
    /// carrying nothing).
    pub fn with_data(id: u64, x: f64, y: f64, data: P) -> Self {
        Point { id, x, y, data }
    }

    /// The same point carrying `data`.
    pub fn with<D>(self, data: D) -> Point<D> {
        Point {
            id: self.id,
            x: self.x,
            y: self.y,
            data,
        }
    }
}

/// A continuous query over a rectangle (border included): it sees every
/// point inside from its registration until its removal. `data` is what the
/// application needs besides (`()` for range queries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query<Q = ()> {
    /// The query's id.
    pub id: u64,
    /// Its closed rectangle.
    pub rect: Rect,
    /// The application's data.
    pub data: Q,
}

impl Query {
    /// A query that carries nothing besides its rectangle.
    pub fn new(id: u64, rect: Rect) -> Self {
        Query { id, rect, data: () }
    }
}

impl<Q> Query<Q> {
    /// A query carrying `data` (any payload; [`Query::new`] is the one
    /// carrying nothing).
    pub fn with_data(id: u64, rect: Rect, data: Q) -> Self {
        Query { id, rect, data }
    }

    /// The same query carrying `data`.
    pub fn with<D>(self, data: D) -> Query<D> {
        Query {
            id: self.id,
            rect: self.rect,
            data,
        }
    }
}

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
