//! The application interface: what SWARM keeps per partition, and the
//! built-in application, continuous range queries over a point stream.

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use timely::ExchangeData;

use crate::common::hash::splitmix64;

use super::geometry::{CellRect, Grid, OutOfBounds, Rect};
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
/// workers (serialized) when the partition moves. Statistics stay SWARM's
/// own; the application only reports which queries it stores, so statistics
/// can be rebuilt after splits and merges.
pub trait PartitionState: Default + Clone + ExchangeData {
    /// What a point carries besides its position.
    type Point: Clone + ExchangeData;
    /// What a query carries besides its rectangle.
    type Query: Clone + ExchangeData;
    /// What evaluating a point emits into SWARM's output stream.
    type Output: Clone + 'static;
    /// Registers `query` (a copy of it, for this partition) in round `round`.
    fn add_query(&mut self, query: Query<Self::Query>, round: u64);
    /// Removes the query `id`; whether this partition held it.
    fn remove_query(&mut self, id: u64) -> bool;
    /// Evaluates a point: emits its results and returns how many
    /// point–query checks it made (the work the cost model prices).
    fn evaluate(&mut self, point: &Point<Self::Point>, emit: &mut dyn FnMut(Self::Output)) -> u64;
    /// Splits into the states of two parts (a query overlapping both parts
    /// goes to both).
    fn split(self, grid: &Grid, first: &CellRect, second: &CellRect) -> (Self, Self);
    /// Merges the state of an adjacent partition (a query held by both is kept once).
    fn merge(&mut self, other: Self);
    /// The stored queries' cells (clipped to `within`, relative to it) and
    /// ages, for rebuilding statistics at the end of round `round`.
    fn query_cells(&self, grid: &Grid, within: &CellRect, round: u64) -> Vec<(CellRect, QueryAge)>;
    /// Bytes the state takes when moved.
    fn moved_bytes(&self) -> usize;
}

/// The cells a query overlaps (records are finite by construction, and
/// clamping keeps every overlap a query had inside the space).
pub(crate) fn query_cells_of(grid: &Grid, rect: &Rect) -> CellRect {
    grid.cells_of(rect, OutOfBounds::Clamp)
        .expect("query rectangles are finite by construction")
}

/// The queries a partition holds, each with the round it was registered in:
/// the bookkeeping every application that stores whole queries shares
/// (removal, split, merge, the cells for statistics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "Q: Serialize + DeserializeOwned")]
pub struct Registered<Q> {
    queries: Vec<(Query<Q>, u64)>,
}

impl<Q> Default for Registered<Q> {
    fn default() -> Self {
        Registered { queries: Vec::new() }
    }
}

impl<Q: Clone> Registered<Q> {
    /// Number of queries held.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether no query is held.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The queries held, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Query<Q>> {
        self.queries.iter().map(|(query, _)| query)
    }

    /// The query at `position` in registration order.
    pub fn get(&self, position: usize) -> Option<&Query<Q>> {
        self.queries.get(position).map(|(query, _)| query)
    }

    /// Holds `query`, registered in `round`.
    pub fn add(&mut self, query: Query<Q>, round: u64) {
        self.queries.push((query, round));
    }

    /// Drops the query `id`; whether it was held.
    pub fn remove(&mut self, id: u64) -> bool {
        let before = self.queries.len();
        self.queries.retain(|(query, _)| query.id != id);
        self.queries.len() != before
    }

    /// The queries of each part (one overlapping both goes to both).
    pub fn split(self, grid: &Grid, first: &CellRect, second: &CellRect) -> (Self, Self) {
        let (mut a, mut b) = (Self::default(), Self::default());
        for (query, round) in self.queries {
            let range = query_cells_of(grid, &query.rect);
            if range.overlaps(first) {
                a.queries.push((query.clone(), round));
            }
            if range.overlaps(second) {
                b.queries.push((query, round));
            }
        }
        (a, b)
    }

    /// Adds the queries of `other` not held already.
    pub fn merge(&mut self, other: Self) {
        for (query, round) in other.queries {
            if !self.queries.iter().any(|(held, _)| held.id == query.id) {
                self.queries.push((query, round));
            }
        }
    }

    /// See [`PartitionState::query_cells`].
    pub fn query_cells(&self, grid: &Grid, within: &CellRect, round: u64) -> Vec<(CellRect, QueryAge)> {
        self.queries
            .iter()
            .filter_map(|(query, registered)| {
                let clipped = query_cells_of(grid, &query.rect).intersection(within)?;
                let age = if *registered == round {
                    QueryAge::LastRound
                } else {
                    QueryAge::Earlier
                };
                Some((clipped.relative_to(within), age))
            })
            .collect()
    }

    /// Bytes the queries take when moved.
    pub fn moved_bytes(&self) -> usize {
        8 + self.queries.len() * std::mem::size_of::<(Query<Q>, u64)>()
    }
}

/// A match of a continuous range query: the query's id and the point's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Match {
    /// The query.
    pub query: u64,
    /// The point.
    pub point: u64,
}

impl Match {
    /// A well-mixed hash of the match, to sum into an order-independent
    /// digest of a set of matches: splitmix64(query XOR splitmix64(point)).
    pub fn digest(&self) -> u64 {
        splitmix64(self.query ^ splitmix64(self.point))
    }
}

/// Continuous range queries: a partition keeps its registered queries,
/// checks each new point against all of them and emits a [`Match`] for every
/// query whose rectangle holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeQueries {
    queries: Registered<()>,
}

impl RangeQueries {
    /// Number of queries held.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether no query is held.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }
}

impl PartitionState for RangeQueries {
    type Point = ();
    type Query = ();
    type Output = Match;

    fn add_query(&mut self, query: Query, round: u64) {
        self.queries.add(query, round);
    }

    fn remove_query(&mut self, id: u64) -> bool {
        self.queries.remove(id)
    }

    fn evaluate(&mut self, point: &Point, emit: &mut dyn FnMut(Match)) -> u64 {
        for query in self.queries.iter() {
            if query.rect.contains(point.x, point.y) {
                emit(Match {
                    query: query.id,
                    point: point.id,
                });
            }
        }
        self.queries.len() as u64
    }

    fn split(self, grid: &Grid, first: &CellRect, second: &CellRect) -> (Self, Self) {
        let (a, b) = self.queries.split(grid, first, second);
        (RangeQueries { queries: a }, RangeQueries { queries: b })
    }

    fn merge(&mut self, other: Self) {
        self.queries.merge(other.queries);
    }

    fn query_cells(&self, grid: &Grid, within: &CellRect, round: u64) -> Vec<(CellRect, QueryAge)> {
        self.queries.query_cells(grid, within, round)
    }

    fn moved_bytes(&self) -> usize {
        self.queries.moved_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_queries_match_split_and_merge() {
        let grid = Grid::new(Rect::new(0.0, 0.0, 10.0, 10.0).unwrap(), 10, 10).unwrap();
        let mut state = RangeQueries::default();
        state.add_query(Query::new(1, Rect::new(0.0, 0.0, 4.0, 4.0).unwrap()), 0);
        state.add_query(Query::new(2, Rect::new(3.0, 3.0, 8.0, 8.0).unwrap()), 1);
        let mut matched = Vec::new();
        let checks = state.evaluate(&Point::new(9, 3.5, 4.0), &mut |m| matched.push(m.query));
        assert_eq!((checks, matched), (2, vec![1, 2]));

        let top = CellRect {
            row0: 0,
            col0: 0,
            row1: 4,
            col1: 9,
        };
        let bottom = CellRect {
            row0: 5,
            col0: 0,
            row1: 9,
            col1: 9,
        };
        let (mut a, b) = state.clone().split(&grid, &top, &bottom);
        assert_eq!((a.len(), b.len()), (2, 1));
        a.merge(b);
        assert_eq!(a.len(), 2);
        assert!(a.remove_query(2));
        assert!(!a.remove_query(2));
        let cells = state.query_cells(&grid, &bottom, 1);
        assert_eq!(
            cells,
            vec![(
                CellRect {
                    row0: 0,
                    col0: 3,
                    row1: 3,
                    col1: 8
                },
                QueryAge::LastRound
            )]
        );
    }
}
