//! The application interface: what SWARM keeps per partition, and the
//! built-in application, continuous range queries over a point stream.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use super::geometry::{CellRect, Grid, OutOfBounds, Rect};
use super::stats::QueryAge;

/// A data point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The point's id.
    pub id: u64,
    /// x coordinate.
    pub x: f64,
    /// y coordinate.
    pub y: f64,
}

/// A continuous range query: matches every later point inside `rect`
/// (border included) until removed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// The query's id.
    pub id: u64,
    /// Its closed rectangle.
    pub rect: Rect,
}

/// Per-partition application state. SWARM creates it empty, feeds it the
/// partition's points, queries and removals, splits and merges it with the
/// partition, and moves it between workers (serialized) when the partition
/// moves. Statistics stay SWARM's own; the application only reports which
/// queries it stores, so statistics can be rebuilt after splits and merges.
pub trait PartitionState: Default + Clone + Serialize + DeserializeOwned + 'static {
    /// Registers `query` (a copy of it, for this partition) in round `round`.
    fn add_query(&mut self, query: Query, round: u64);
    /// Removes the query `id`; whether this partition held it.
    fn remove_query(&mut self, id: u64) -> bool;
    /// Evaluates a point: calls `matched` with the id of every query it
    /// matches and returns how many point–query checks it made.
    fn evaluate(&mut self, point: &Point, matched: &mut dyn FnMut(u64)) -> u64;
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

/// Continuous range queries: a partition keeps its registered queries and
/// checks each new point against all of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeQueries {
    queries: Vec<(Query, u64)>,
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

fn cells(grid: &Grid, query: &Query) -> CellRect {
    grid.cells_of(&query.rect, OutOfBounds::Clamp)
        .expect("queries are validated on input")
}

impl PartitionState for RangeQueries {
    fn add_query(&mut self, query: Query, round: u64) {
        self.queries.push((query, round));
    }

    fn remove_query(&mut self, id: u64) -> bool {
        let before = self.queries.len();
        self.queries.retain(|(query, _)| query.id != id);
        self.queries.len() != before
    }

    fn evaluate(&mut self, point: &Point, matched: &mut dyn FnMut(u64)) -> u64 {
        for (query, _) in &self.queries {
            if query.rect.contains(point.x, point.y) {
                matched(query.id);
            }
        }
        self.queries.len() as u64
    }

    fn split(self, grid: &Grid, first: &CellRect, second: &CellRect) -> (Self, Self) {
        let (mut a, mut b) = (RangeQueries::default(), RangeQueries::default());
        for (query, round) in self.queries {
            let range = cells(grid, &query);
            if range.overlaps(first) {
                a.queries.push((query, round));
            }
            if range.overlaps(second) {
                b.queries.push((query, round));
            }
        }
        (a, b)
    }

    fn merge(&mut self, other: Self) {
        for (query, round) in other.queries {
            if !self.queries.iter().any(|(held, _)| held.id == query.id) {
                self.queries.push((query, round));
            }
        }
    }

    fn query_cells(&self, grid: &Grid, within: &CellRect, round: u64) -> Vec<(CellRect, QueryAge)> {
        self.queries
            .iter()
            .filter_map(|(query, registered)| {
                let clipped = cells(grid, query).intersection(within)?;
                let age = if *registered == round {
                    QueryAge::LastRound
                } else {
                    QueryAge::Earlier
                };
                Some((clipped.relative_to(within), age))
            })
            .collect()
    }

    fn moved_bytes(&self) -> usize {
        8 + self.queries.len() * std::mem::size_of::<(Query, u64)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_queries_match_split_and_merge() {
        let grid = Grid::new(Rect::new(0.0, 0.0, 10.0, 10.0).unwrap(), 10, 10).unwrap();
        let mut state = RangeQueries::default();
        state.add_query(
            Query {
                id: 1,
                rect: Rect::new(0.0, 0.0, 4.0, 4.0).unwrap(),
            },
            0,
        );
        state.add_query(
            Query {
                id: 2,
                rect: Rect::new(3.0, 3.0, 8.0, 8.0).unwrap(),
            },
            1,
        );
        let mut matched = Vec::new();
        let checks = state.evaluate(&Point { id: 9, x: 3.5, y: 4.0 }, &mut |id| matched.push(id));
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
