//! The query store: the continuous queries a partition holds, filed by the
//! cells they overlap, which every application that stores whole queries
//! shares ([`Registered`]).

use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasherDefault;

use serde::ser::{SerializeStruct, Serializer};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::common::hash::FingerprintHasher;

use super::filing::{Filing, Fine, FILE_AFTER, FINE_FROM};
use super::geometry::{Cell, CellRect, Grid, OutOfBounds, Rect};
use super::objects::Query;
use super::stats::QueryAge;

/// The cells a query overlaps (records are finite by construction, and
/// clamping keeps every overlap a query had inside the space).
pub(crate) fn query_cells_of(grid: &Grid, rect: &Rect) -> CellRect {
    grid.cells_of(rect, OutOfBounds::Clamp)
        .expect("query rectangles are finite by construction")
}

/// One query held by a partition: the round it was registered in and the
/// partition's cells it overlaps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "Q: Serialize + DeserializeOwned")]
struct Held<Q> {
    query: Query<Q>,
    round: u64,
    cells: CellRect,
}

/// A cell as a map key.
fn key(cell: Cell) -> u64 {
    (u64::from(cell.row) << 32) | u64::from(cell.col)
}

/// The queries overlapping a cell: their positions, and how they are filed.
#[derive(Debug, Clone, Default)]
struct CellQueries {
    positions: Vec<u32>,
    filing: Filing,
}

impl CellQueries {
    /// Keeps the cell's finer filing up to date with `change`, or starts
    /// counting again once the cell's queries have doubled or halved since
    /// it was filed (or found not worth filing).
    fn refile(&mut self, change: impl FnOnce(&mut Fine)) {
        if !self.filing.suits(self.positions.len()) {
            self.filing = match self.filing {
                Filing::Filed(_) => Filing::hot(),
                _ => Filing::default(),
            };
        } else if let Filing::Filed(fine) = &mut self.filing {
            change(fine);
        }
    }
}

type CellIndex = HashMap<u64, CellQueries, BuildHasherDefault<FingerprintHasher>>;

/// The queries overlapping each cell, built if need be (the `hot` cells
/// are filed finer at their first point).
fn cell_index<'a, Q>(
    queries: &[Held<Q>],
    by_cell: &'a mut Option<CellIndex>,
    hot: &BTreeSet<u64>,
) -> &'a mut CellIndex {
    by_cell.get_or_insert_with(|| {
        let mut index = CellIndex::default();
        for (position, held) in queries.iter().enumerate() {
            for cell in held.cells.iter() {
                index.entry(key(cell)).or_default().positions.push(position as u32);
            }
        }
        for cell in hot {
            if let Some(here) = index.get_mut(cell) {
                here.filing = Filing::hot();
            }
        }
        index
    })
}

/// The queries a partition holds, each with the round it was registered in
/// and filed by the cells it overlaps, so that a point meets only the
/// queries of its own cell: the cost of a point does not grow with the
/// partition's size. The bookkeeping every application that stores whole
/// queries shares (removal, split, merge, the cells for statistics). An
/// application that evaluates a point only against
/// [`for_each_in`](Registered::for_each_in) its cell makes the same checks
/// whatever the partition's size; one that needs only the queries whose
/// rectangle holds the point (as `RangeQueries` does) uses
/// [`for_each_candidate`](Registered::for_each_candidate), which files a
/// cell holding many queries finer, so that a point of a hot cell meets
/// only the queries near it.
#[derive(Debug, Clone, Deserialize)]
#[serde(bound = "Q: Serialize + DeserializeOwned")]
pub struct Registered<Q> {
    queries: Vec<Held<Q>>,
    /// Cell → positions in `queries` (and for a cell of many queries, a
    /// finer filing once it has met enough points); built when first
    /// needed after a move, split or merge (it is not sent with a moving
    /// partition).
    #[serde(skip)]
    by_cell: Option<CellIndex>,
    /// Cells filed finer, on trial or well on their way to it when the
    /// index was last dropped (a split or merge) or sent (a move), and
    /// those whose filing passed its trial since: filed again after a few
    /// points when the index is rebuilt.
    hot: BTreeSet<u64>,
}

impl<Q> Default for Registered<Q> {
    fn default() -> Self {
        Registered {
            queries: Vec::new(),
            by_cell: None,
            hot: BTreeSet::new(),
        }
    }
}

/// Sent with its queries and its hot cells, the warm cells of its index
/// added, so that the receiver files them without counting their points
/// again.
impl<Q: Serialize + DeserializeOwned> Serialize for Registered<Q> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("Registered", 2)?;
        state.serialize_field("queries", &self.queries)?;
        state.serialize_field("hot", &self.hot_to_send())?;
        state.end()
    }
}

impl<Q> Registered<Q> {
    /// The cells filed finer or well on their way to it.
    fn warm(&self) -> impl Iterator<Item = u64> + '_ {
        let warm = |here: &CellQueries| {
            here.positions.len() >= FINE_FROM
                && match here.filing {
                    Filing::Filed(_) => true,
                    Filing::Counting(met, _) => met >= FILE_AFTER / 2,
                    Filing::Plain(_) => false,
                }
        };
        self.by_cell
            .iter()
            .flatten()
            .filter(move |(_, here)| warm(here))
            .map(|(&cell, _)| cell)
    }

    /// The hot cells and the warm ones, as a move sends them.
    fn hot_to_send(&self) -> BTreeSet<u64> {
        let mut hot = self.hot.clone();
        hot.extend(self.warm());
        hot
    }

    /// Notes the warm cells in `hot`, before a split or merge drops the
    /// index, and forgets the hot cells that have cooled (too few queries,
    /// or found not worth filing), so that `hot` follows the load.
    fn note_hot(&mut self) {
        let Some(index) = &self.by_cell else {
            return;
        };
        self.hot.retain(|cell| {
            index
                .get(cell)
                .is_some_and(|here| here.positions.len() >= FINE_FROM && !matches!(here.filing, Filing::Plain(_)))
        });
        let warm: Vec<u64> = self.warm().collect();
        self.hot.extend(warm);
    }
}

impl<Q: PartialEq> PartialEq for Registered<Q> {
    fn eq(&self, other: &Self) -> bool {
        self.queries == other.queries
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

    /// The queries held.
    pub fn iter(&self) -> impl Iterator<Item = &Query<Q>> {
        self.queries.iter().map(|held| &held.query)
    }

    /// The query at `position` (positions change when queries are removed).
    pub fn get(&self, position: usize) -> Option<&Query<Q>> {
        self.queries.get(position).map(|held| &held.query)
    }

    /// Calls `f` on every query held that overlaps `cell`; how many.
    #[inline]
    pub fn for_each_in(&mut self, cell: Cell, mut f: impl FnMut(&Query<Q>)) -> u64 {
        let Registered { queries, by_cell, hot } = self;
        let Some(CellQueries { positions, .. }) = cell_index(queries, by_cell, hot).get(&key(cell)) else {
            return 0;
        };
        for &position in positions {
            f(&queries[position as usize].query);
        }
        positions.len() as u64
    }

    /// Calls `f` on the queries held that may hold the point (`x`, `y`),
    /// which lies in `cell` (or was clamped into it): every query whose
    /// rectangle holds it, and in a cell of many queries few others (those
    /// overlapping the point's part of the cell, cut at the queries' own
    /// edges); how many.
    #[inline]
    pub fn for_each_candidate(&mut self, cell: Cell, x: f64, y: f64, mut f: impl FnMut(&Query<Q>)) -> u64 {
        let Registered { queries, by_cell, hot } = self;
        let Some(CellQueries { positions, filing }) = cell_index(queries, by_cell, hot).get_mut(&key(cell)) else {
            return 0;
        };
        let held = |p: u32| {
            let held = &queries[p as usize];
            (&held.query.rect, &held.cells)
        };
        let mut checks = 0;
        let kept = filing.meet(cell, positions, held, (x, y), |list| {
            for &position in list {
                f(&queries[position as usize].query);
            }
            checks += list.len() as u64;
        });
        match kept {
            Some(true) => hot.insert(key(cell)),
            Some(false) => hot.remove(&key(cell)),
            None => false,
        };
        checks
    }

    /// Holds `query`, which overlaps `cells` of the partition, registered in `round`.
    pub fn add(&mut self, query: Query<Q>, cells: CellRect, round: u64) {
        let position = self.queries.len() as u32;
        if let Some(index) = &mut self.by_cell {
            for cell in cells.iter() {
                let here = index.entry(key(cell)).or_default();
                here.positions.push(position);
                here.refile(|fine| fine.add(position, &query.rect));
            }
        }
        self.queries.push(Held { query, round, cells });
    }

    /// Drops the query `id`; whether it was held.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(position) = self.queries.iter().position(|held| held.query.id == id) else {
            return false;
        };
        let last = self.queries.len() - 1;
        let removed = self.queries.swap_remove(position);
        if let Some(index) = &mut self.by_cell {
            // Unfile the removed query, and refile the last one at its place.
            for cell in removed.cells.iter() {
                if let Some(here) = index.get_mut(&key(cell)) {
                    here.positions.retain(|&p| p as usize != position);
                    here.refile(|fine| fine.remove(position as u32, &removed.query.rect));
                }
            }
            if position != last {
                let moved = &self.queries[position];
                for cell in moved.cells.iter() {
                    let Some(here) = index.get_mut(&key(cell)) else {
                        continue;
                    };
                    for p in here.positions.iter_mut().filter(|p| **p as usize == last) {
                        *p = position as u32;
                    }
                    if let Filing::Filed(fine) = &mut here.filing {
                        fine.renumber(last as u32, position as u32, &moved.query.rect);
                    }
                }
            }
        }
        true
    }

    /// The queries of each part (one overlapping both goes to both).
    pub fn split(mut self, first: &CellRect, second: &CellRect) -> (Self, Self) {
        self.note_hot();
        let (mut a, mut b) = (Self::default(), Self::default());
        for &hot in &self.hot {
            let cell = Cell {
                row: (hot >> 32) as u32,
                col: hot as u32,
            };
            if first.contains(cell) {
                a.hot.insert(hot);
            } else if second.contains(cell) {
                b.hot.insert(hot);
            }
        }
        for held in self.queries {
            if let Some(cells) = held.cells.intersection(first) {
                a.queries.push(Held { cells, ..held.clone() });
            }
            if let Some(cells) = held.cells.intersection(second) {
                b.queries.push(Held { cells, ..held });
            }
        }
        (a, b)
    }

    /// Adds the queries of `other`, the state of a partition whose union
    /// with this one is a rectangle, not held already; a query held by both
    /// covers its cells in both (the bounding box of the two).
    pub fn merge(&mut self, mut other: Self) {
        self.note_hot();
        other.note_hot();
        let mine: HashMap<u64, usize> = self
            .queries
            .iter()
            .enumerate()
            .map(|(position, held)| (held.query.id, position))
            .collect();
        for held in other.queries {
            match mine.get(&held.query.id) {
                Some(&position) => {
                    let cells = &mut self.queries[position].cells;
                    *cells = cells.bounding(&held.cells);
                }
                None => self.queries.push(held),
            }
        }
        self.by_cell = None;
        self.hot.extend(other.hot);
    }

    /// See [`PartitionState::query_cells`](super::PartitionState::query_cells).
    pub fn query_cells(&self, within: &CellRect, round: u64) -> Vec<(CellRect, QueryAge)> {
        self.queries
            .iter()
            .filter_map(|held| {
                let clipped = held.cells.intersection(within)?;
                let age = if held.round == round {
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
        8 + self.queries.len() * std::mem::size_of::<Held<Q>>() + 8 * self.hot_to_send().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::app::PartitionState;
    use crate::swarm::range_queries::tests::{add, evaluate, grid};
    use crate::swarm::range_queries::RangeQueries;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Step {
        Add(u64, f64, f64, f64, f64),
        Remove(u64),
        SplitMerge(u32),
        Point(f64, f64),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..60u64, 0.0..10.0, 0.0..10.0, 0.0..4.0, 0.0..4.0).prop_map(
                |(id, x, y, w, h): (u64, f64, f64, f64, f64)| Step::Add(id, x, y, (x + w).min(10.0), (y + h).min(10.0))
            ),
            // Small queries crowding cell (2, 2), which gets filed finer.
            (0..60u64, 2.0..3.0, 2.0..3.0, 0.0..0.3, 0.0..0.3)
                .prop_map(|(id, x, y, w, h): (u64, f64, f64, f64, f64)| Step::Add(id, x, y, x + w, y + h)),
            (0..60u64).prop_map(Step::Remove),
            (0..9u32).prop_map(Step::SplitMerge),
            (0.0..10.0, 0.0..10.0).prop_map(|(x, y)| Step::Point(x, y)),
            (2.0..3.0, 2.0..3.0).prop_map(|(x, y)| Step::Point(x, y)),
        ]
    }

    proptest! {
        /// Through adds, removals, splits and merges, the cell index gives
        /// every point exactly the queries that hold it among those held
        /// (a linear scan is the reference), and checks those overlapping
        /// its cell, or fewer in a cell filed finer.
        #[test]
        fn the_cell_index_agrees_with_a_scan(steps in proptest::collection::vec(step(), 1..200)) {
            let all = grid().all();
            let mut state = RangeQueries::default();
            let mut held: Vec<(u64, Rect)> = Vec::new();
            for step in steps {
                match step {
                    Step::Add(id, x1, y1, x2, y2) => {
                        let rect = Rect::new(x1, y1, x2, y2).unwrap();
                        if !held.iter().any(|(h, _)| *h == id) {
                            add(&mut state, id, rect, &all, 0);
                            held.push((id, rect));
                        }
                    }
                    Step::Remove(id) => {
                        let was = held.iter().any(|(h, _)| *h == id);
                        held.retain(|(h, _)| *h != id);
                        prop_assert_eq!(state.remove_query(id), was);
                    }
                    Step::SplitMerge(after) => {
                        let line = crate::swarm::plan::SplitLine { axis: crate::swarm::plan::Axis::Columns, after };
                        let (first, second) = line.parts(&all).unwrap();
                        let (mut a, b) = state.clone().split(&first, &second);
                        a.merge(b);
                        state = a;
                    }
                    Step::Point(x, y) => {
                        let cell = grid().cell_of(x, y, OutOfBounds::Reject).unwrap();
                        let overlapping = held.iter().filter(|(_, r)| query_cells_of(&grid(), r).contains(cell)).count();
                        // Points all over the point's cell, so that a crowded one meets enough to be filed finer.
                        for k in 0..FILE_AFTER / 4 {
                            let spread = |v: f64, by: f64| v.floor() + (v.fract() + by * f64::from(k)).fract();
                            let (x, y) = if k == 0 { (x, y) } else { (spread(x, 0.37), spread(y, 0.61)) };
                            let mut want: Vec<u64> = held.iter().filter(|(_, r)| r.contains(x, y)).map(|(id, _)| *id).collect();
                            want.sort();
                            let (checks, got) = evaluate(&mut state, x, y);
                            prop_assert_eq!(got, want);
                            if overlapping < FINE_FROM {
                                prop_assert_eq!(checks, overlapping as u64);
                            } else {
                                prop_assert!(checks <= overlapping as u64);
                            }
                        }
                    }
                }
            }
            prop_assert_eq!(state.len(), held.len());
        }
    }

    #[test]
    fn a_crowded_cell_is_filed_finer_and_refiled_when_its_queries_change() {
        let all = grid().all();
        let mut state = RangeQueries::default();
        // 40 queries of 0.1 × 0.1 along the diagonal of cell (2, 2), one covering it.
        for i in 0..40u64 {
            let v = 2.0 + i as f64 / 40.0;
            add(&mut state, i, Rect::new(v, v, v + 0.1, v + 0.1).unwrap(), &all, 0);
        }
        add(&mut state, 99, Rect::new(1.0, 1.0, 4.0, 4.0).unwrap(), &all, 0);
        // Until the cell has met enough points it is not worth filing.
        let sweep = |i: u32| (2.0 + f64::from(i * 37 % 64) / 64.0, 2.0 + f64::from(i * 53 % 64) / 64.0);
        for i in 1..FILE_AFTER {
            let (x, y) = sweep(i);
            assert_eq!(evaluate(&mut state, x, y).0, 41);
        }
        let (checks, matched) = evaluate(&mut state, 2.51, 2.52);
        assert_eq!(matched, vec![17, 18, 19, 20, 99]);
        assert!(checks < 20, "{checks} checks of 41 queries in the cell");
        // A removal and an addition in the cell: the filing follows.
        assert!(state.remove_query(18));
        add(&mut state, 100, Rect::new(2.5, 2.5, 2.6, 2.6).unwrap(), &all, 1);
        let (_, matched) = evaluate(&mut state, 2.51, 2.52);
        assert_eq!(matched, vec![17, 19, 20, 99, 100]);
        assert!(state.remove_query(0));
        let (_, matched) = evaluate(&mut state, 2.01, 2.02);
        assert_eq!(matched, vec![99]);
        // Past its trial the cell is known to pay: split, merged and sent,
        // the state files it again at its first point.
        for i in 0..FILE_AFTER {
            let (x, y) = sweep(i);
            evaluate(&mut state, x, y);
        }
        let line = crate::swarm::plan::SplitLine {
            axis: crate::swarm::plan::Axis::Columns,
            after: 4,
        };
        let (first, second) = line.parts(&all).unwrap();
        let (mut a, b) = state.split(&first, &second);
        a.merge(b);
        let mut sent: RangeQueries = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        for i in 0..32 {
            let (x, y) = sweep(i);
            evaluate(&mut sent, x, y);
        }
        let (checks, matched) = evaluate(&mut sent, 2.51, 2.52);
        assert_eq!(matched, vec![17, 19, 20, 99, 100]);
        assert!(
            checks < 20,
            "{checks} checks 32 points after a split, a merge and a move"
        );
        // Once the cell holds too few queries it is no longer hot after a split.
        let cell = key(Cell { row: 2, col: 2 });
        assert!(sent.registered().hot.contains(&cell));
        for id in 1..40 {
            sent.remove_query(id);
        }
        evaluate(&mut sent, 2.51, 2.52);
        let (a, b) = sent.split(&first, &second);
        assert!(!a.registered().hot.contains(&cell) && !b.registered().hot.contains(&cell));
    }
}
