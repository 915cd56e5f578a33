//! A second built-in application: continuous spatio-textual range queries,
//! as in SWARM's predecessor Tornado. A query is a rectangle and keywords; a
//! point carries keywords and matches a query when it lies inside the
//! rectangle and carries every one of the query's keywords.
//!
//! Each partition indexes its queries by one keyword each (an inverted
//! index), so a point is checked only against the queries filed under its
//! own keywords (and those with no keyword): the work per point is a share
//! of the partition's queries, which [`TextualCost`](super::cost::TextualCost) prices.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::common::hash::key_hash;

use super::app::{PartitionState, Point, Query};
use super::geometry::{Cell, CellRect};
use super::query_store::Registered;
use super::range_queries::Match;

/// A set of keywords, as sorted distinct 64-bit ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Keywords(Vec<u64>);

impl Keywords {
    /// The keywords with these ids.
    pub fn ids(ids: impl IntoIterator<Item = u64>) -> Self {
        let mut ids: Vec<u64> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        Keywords(ids)
    }

    /// The keywords of these words (each word's id is its [`key_hash`]).
    pub fn words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        Self::ids(words.into_iter().map(key_hash))
    }

    /// The ids, sorted.
    pub fn as_slice(&self) -> &[u64] {
        &self.0
    }

    /// Whether every keyword of `self` is in `other`.
    pub fn subset_of(&self, other: &Keywords) -> bool {
        let mut theirs = other.0.iter();
        self.0.iter().all(|k| theirs.any(|o| o == k))
    }
}

/// Continuous spatio-textual range queries (points and queries carry
/// [`Keywords`]); emits a [`Match`] per query a point satisfies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SpatioTextual {
    queries: Registered<Keywords>,
    /// Keyword → positions in `queries` of the queries filed under it (the
    /// smallest of their keywords; `None` for queries with none). Rebuilt
    /// after removals, splits, merges and moves.
    #[serde(skip)]
    index: Option<HashMap<Option<u64>, Vec<usize>>>,
}

impl PartialEq for SpatioTextual {
    fn eq(&self, other: &Self) -> bool {
        self.queries == other.queries
    }
}

impl SpatioTextual {
    /// Number of queries held.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether no query is held.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    fn filed_under(query: &Query<Keywords>) -> Option<u64> {
        query.data.as_slice().first().copied()
    }

    fn index(&mut self) -> &HashMap<Option<u64>, Vec<usize>> {
        let queries = &self.queries;
        self.index.get_or_insert_with(|| {
            let mut index: HashMap<Option<u64>, Vec<usize>> = HashMap::new();
            for (position, query) in queries.iter().enumerate() {
                index.entry(Self::filed_under(query)).or_default().push(position);
            }
            index
        })
    }
}

impl PartitionState for SpatioTextual {
    type Point = Keywords;
    type Query = Keywords;
    type Output = Match;

    fn registered(&self) -> &Registered<Keywords> {
        &self.queries
    }

    fn registered_mut(&mut self) -> &mut Registered<Keywords> {
        // The caller may change the queries: the keyword index is rebuilt.
        self.index = None;
        &mut self.queries
    }

    fn add_query(&mut self, query: Query<Keywords>, cells: CellRect, round: u64) {
        if let Some(index) = &mut self.index {
            index
                .entry(Self::filed_under(&query))
                .or_default()
                .push(self.queries.len());
        }
        self.queries.add(query, cells, round);
    }

    fn evaluate(&mut self, point: &Point<Keywords>, _: Cell, emit: &mut dyn FnMut(Match)) -> u64 {
        self.index();
        let (index, queries) = (self.index.as_ref().expect("built"), &self.queries);
        let mut checks = 0;
        let keys = std::iter::once(None).chain(point.data.as_slice().iter().map(|&k| Some(k)));
        for key in keys {
            for &position in index.get(&key).into_iter().flatten() {
                checks += 1;
                let query = queries.get(position).expect("indexed positions are held");
                if query.rect.contains(point.x, point.y) && query.data.subset_of(&point.data) {
                    emit(Match {
                        query: query.id,
                        point: point.id,
                    });
                }
            }
        }
        checks
    }

    fn moved_bytes(&self) -> usize {
        self.queries.moved_bytes() + self.queries.iter().map(|q| 8 * q.data.as_slice().len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::geometry::Rect;

    #[test]
    fn a_point_matches_inside_with_every_keyword_and_is_checked_only_against_its_keywords() {
        let mut state = SpatioTextual::default();
        let area = Rect::new(0.0, 0.0, 10.0, 10.0).unwrap();
        // The partition is one cell: every query overlaps it.
        let cell = Cell { row: 0, col: 0 };
        let cells = CellRect::spanning(cell, cell).unwrap();
        state.add_query(Query::new(1, area).with(Keywords::words(["cafe", "wifi"])), cells, 0);
        state.add_query(Query::new(2, area).with(Keywords::words(["museum"])), cells, 0);
        state.add_query(Query::new(3, area).with(Keywords::default()), cells, 0);
        state.add_query(
            Query::new(4, Rect::new(20.0, 20.0, 30.0, 30.0).unwrap()).with(Keywords::words(["cafe"])),
            cells,
            0,
        );
        let mut seen = Vec::new();
        let point = Point::new(9, 5.0, 5.0).with(Keywords::words(["wifi", "cafe", "bar"]));
        let checks = state.evaluate(&point, cell, &mut |m| seen.push(m.query));
        seen.sort();
        assert_eq!(seen, vec![1, 3]);
        // Query 3 (no keyword) always; 1 and 4 only if filed under one of
        // the point's keywords; 2 (museum) never.
        assert!((1..=3).contains(&checks), "{checks}");
        assert!(state.remove_query(1));
        let mut seen = Vec::new();
        state.evaluate(&point, cell, &mut |m| seen.push(m.query));
        assert_eq!(seen, vec![3]);
    }

    #[test]
    fn subset_is_a_sorted_merge() {
        let all = Keywords::ids([5, 1, 9, 1]);
        assert_eq!(all.as_slice(), &[1, 5, 9]);
        assert!(Keywords::ids([1, 9]).subset_of(&all));
        assert!(!Keywords::ids([1, 7]).subset_of(&all));
        assert!(Keywords::default().subset_of(&all));
    }
}
