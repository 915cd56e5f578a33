//! The built-in application: continuous range queries over a point stream.

use serde::{Deserialize, Serialize};

use crate::common::hash::splitmix64;

use super::app::{PartitionState, Point};
use super::geometry::Cell;
use super::query_store::Registered;

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
/// checks each new point against those overlapping its cell and emits a
/// [`Match`] for every query whose rectangle holds it.
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

    fn registered(&self) -> &Registered<()> {
        &self.queries
    }

    fn registered_mut(&mut self) -> &mut Registered<()> {
        &mut self.queries
    }

    fn evaluate(&mut self, point: &Point, cell: Cell, emit: &mut dyn FnMut(Match)) -> u64 {
        self.queries.for_each_candidate(cell, point.x, point.y, |query| {
            if query.rect.contains(point.x, point.y) {
                emit(Match {
                    query: query.id,
                    point: point.id,
                });
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::swarm::app::Query;
    use crate::swarm::geometry::{CellRect, Grid, OutOfBounds, Rect};
    use crate::swarm::query_store::query_cells_of;
    use crate::swarm::stats::QueryAge;

    /// A 10 × 10 space of unit cells (the query store's tests use these too).
    pub(crate) fn grid() -> Grid {
        Grid::new(Rect::new(0.0, 0.0, 10.0, 10.0).unwrap(), 10, 10).unwrap()
    }

    pub(crate) fn add(state: &mut RangeQueries, id: u64, rect: Rect, within: &CellRect, round: u64) {
        let cells = query_cells_of(&grid(), &rect).intersection(within).unwrap();
        state.add_query(Query::new(id, rect), cells, round);
    }

    pub(crate) fn evaluate(state: &mut RangeQueries, x: f64, y: f64) -> (u64, Vec<u64>) {
        let cell = grid().cell_of(x, y, OutOfBounds::Reject).unwrap();
        let mut matched = Vec::new();
        let checks = state.evaluate(&Point::new(9, x, y), cell, &mut |m| matched.push(m.query));
        matched.sort();
        (checks, matched)
    }

    #[test]
    fn range_queries_match_split_and_merge() {
        let all = grid().all();
        let mut state = RangeQueries::default();
        add(&mut state, 1, Rect::new(0.0, 0.0, 4.0, 4.0).unwrap(), &all, 0);
        add(&mut state, 2, Rect::new(3.0, 3.0, 8.0, 8.0).unwrap(), &all, 1);
        assert_eq!(evaluate(&mut state, 3.5, 4.0), (2, vec![1, 2]));
        // A point meets only the queries of its own cell.
        assert_eq!(evaluate(&mut state, 7.5, 7.5), (1, vec![2]));
        assert_eq!(evaluate(&mut state, 9.5, 0.5), (0, vec![]));

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
        let (mut a, mut b) = state.clone().split(&top, &bottom);
        assert_eq!((a.len(), b.len()), (2, 1));
        assert_eq!(evaluate(&mut b, 7.5, 7.5), (1, vec![2]));
        a.merge(b);
        assert_eq!(a.len(), 2);
        assert_eq!(evaluate(&mut a, 7.5, 7.5), (1, vec![2]));
        assert!(a.remove_query(2));
        assert!(!a.remove_query(2));
        assert_eq!(evaluate(&mut a, 3.5, 3.5), (1, vec![1]));
        let cells = state.query_cells(&bottom, 1);
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
