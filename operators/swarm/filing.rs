//! A hot cell's queries filed finer: a cell that holds many queries and
//! meets many points is cut into slabs at the query edges that fall inside
//! it, so that a point meets only the queries overlapping its own part of
//! the cell. This is the grid refined where it is hot, with the cuts chosen
//! by the queries themselves; other cells keep one list, so memory and
//! upkeep grow only where checks are saved.

use super::geometry::{Cell, CellRect, Rect};

/// A cell holding at least this many queries that do not cover it is filed
/// finer: below it, two binary searches and the upkeep cost about what the
/// checks they save do.
pub(crate) const FINE_FROM: usize = 16;

/// At most this many slabs per axis: a point meets at most
/// (log2 8 + 1)² = 16 lists, and a filed cell keeps 4 · 8 · 8 of them.
const MAX_SLABS: usize = 8;

/// Query edges per slab the cuts aim at.
const PER_SLAB: usize = 2;

/// A cell is filed finer once this many of its points have met all its
/// queries: filing costs its lists and a few pushes per query, and keeping
/// the filing as queries come and go costs as much again, which a cell
/// that sees few points would not repay (measured: filing after 64 points
/// cost a 256 × 128 grid 20 % of its points/s for 3 % fewer checks).
pub(crate) const FILE_AFTER: u32 = 256;

/// A cell that was hot before its partition's index was rebuilt is filed
/// after this many points (to see where its points lie) rather than
/// [`FILE_AFTER`].
const HOT_AFTER: u32 = 8;

/// The box of the points a cell has met.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen {
    x: (f64, f64),
    y: (f64, f64),
}

impl Default for Seen {
    fn default() -> Self {
        Seen {
            x: (f64::INFINITY, f64::NEG_INFINITY),
            y: (f64::INFINITY, f64::NEG_INFINITY),
        }
    }
}

impl Seen {
    fn add(&mut self, x: f64, y: f64) {
        self.x = (self.x.0.min(x), self.x.1.max(x));
        self.y = (self.y.0.min(y), self.y.1.max(y));
    }
}

/// Where a crowded cell stands: counting its points, filed finer (on
/// trial for its first [`FILE_AFTER`] points, then for good if it saved a
/// quarter of the checks), or found not worth filing.
#[derive(Debug, Clone)]
pub(crate) enum Filing {
    /// Points met so far, and the box they lie in.
    Counting(u32, Seen),
    /// Filed finer (boxed: most cells are not, and every cell of an
    /// index holds a `Filing`).
    Filed(Box<Fine>),
    /// Not worth filing while it holds about this many queries (fewer than
    /// [`FINE_FROM`] of them do not cover the cell, or the filing saved too
    /// little on its trial).
    Plain(usize),
}

impl Default for Filing {
    fn default() -> Self {
        Filing::Counting(0, Seen::default())
    }
}

impl Filing {
    /// A cell known to pay for filing (it did before a move, split or
    /// merge rebuilt its partition's index): filed once a few points have
    /// shown where its points lie.
    pub(crate) fn hot() -> Filing {
        Filing::Counting(FILE_AFTER - HOT_AFTER, Seen::default())
    }

    /// Whether the filing (or the finding that it does not pay) still
    /// holds for a cell now holding `queries`: until they have doubled or
    /// halved.
    pub(crate) fn suits(&self, queries: usize) -> bool {
        let built_for = match self {
            Filing::Counting(..) => return true,
            Filing::Filed(fine) => fine.built_for,
            Filing::Plain(built_for) => *built_for,
        };
        built_for / 2 <= queries && queries <= built_for * 2
    }

    /// Meets a point at (x, y) of `cell`, whose queries are at `positions`
    /// (`held(position)` says what they are): calls `f` on each list of
    /// candidates, filing the cell when it has met enough points. When the
    /// cell has just been found worth filing for good (its trial passed)
    /// or not (its trial failed, or too few of its queries are partial),
    /// which.
    #[inline]
    pub(crate) fn meet<'a>(
        &mut self,
        cell: Cell,
        positions: &[u32],
        held: impl Fn(u32) -> HeldRef<'a>,
        (x, y): (f64, f64),
        mut f: impl FnMut(&[u32]),
    ) -> Option<bool> {
        if positions.len() < FINE_FROM {
            f(positions);
            return None;
        }
        if let Filing::Counting(met, seen) = self {
            *met += 1;
            seen.add(x, y);
            if *met >= FILE_AFTER {
                match Fine::build(cell, positions, held, seen) {
                    Some(fine) => *self = Filing::Filed(Box::new(fine)),
                    None => {
                        *self = Filing::Plain(positions.len());
                        f(positions);
                        return Some(false);
                    }
                }
            }
        }
        match self {
            Filing::Filed(fine) => {
                let mut checks = 0;
                fine.candidates(x, y, |list| {
                    checks += list.len() as u64;
                    f(list)
                });
                let verdict = fine.try_out(checks, positions.len());
                if verdict == Some(false) {
                    *self = Filing::Plain(positions.len());
                }
                verdict
            }
            Filing::Counting(..) | Filing::Plain(_) => {
                f(positions);
                None
            }
        }
    }
}

/// One cell's queries, filed in a two-dimensional segment tree over its
/// slabs: a query is filed at the few nodes whose slabs its rectangle
/// spans, and a point meets the queries filed on its slab's paths to the
/// root, each once. A query covering the cell sits at the root alone, one
/// crossing it in x at the root of x, and so on: a big query costs one list
/// in most cells it overlaps. Positions are the owner's (see
/// [`Registered`](super::plan::Registered)); every cut is a query edge inside the
/// cell. Any cuts file correctly, so queries added later are filed at the
/// same cuts, until the cell's queries have doubled or halved and new cuts
/// pay.
#[derive(Debug, Clone)]
pub(crate) struct Fine {
    /// x cuts, ascending: slab i holds `xs[i - 1] <= x < xs[i]`.
    xs: Vec<f64>,
    /// y cuts, the same way.
    ys: Vec<f64>,
    /// Leaves of each axis's tree (powers of two, at least the slabs).
    leaves: (usize, usize),
    /// Node (x node, y node) at `x node * 2 * leaves.1 + y node`, nodes of
    /// each axis numbered from 1 (the root), node n's children 2n and 2n + 1.
    nodes: Vec<Vec<u32>>,
    /// How many queries the cuts were chosen for.
    built_for: usize,
    /// Points met and their candidates while on trial; `None` once kept.
    trial: Option<(u32, u64)>,
}

/// A query held, as filing sees it: its rectangle and the cells it overlaps.
pub(crate) type HeldRef<'a> = (&'a Rect, &'a CellRect);

impl Fine {
    /// Files the queries at `positions` of `cell`; `held(position)` is a
    /// query's rectangle and the cells it overlaps. `None` where fewer than
    /// [`FINE_FROM`] of them do not cover the cell: every point meets the
    /// others anyway.
    pub(crate) fn build<'a>(
        cell: Cell,
        positions: &[u32],
        held: impl Fn(u32) -> HeldRef<'a>,
        seen: &Seen,
    ) -> Option<Fine> {
        let (mut x_edges, mut y_edges, mut partial) = (Vec::new(), Vec::new(), 0);
        for &position in positions {
            let (rect, cells) = held(position);
            partial += usize::from(!covers(cell, cells));
            // A query's edge lies in this cell where the cell is its first or last column (row).
            if cells.col0 == cell.col {
                x_edges.push(rect.x1);
            }
            if cells.col1 == cell.col {
                x_edges.push(rect.x2);
            }
            if cells.row0 == cell.row {
                y_edges.push(rect.y1);
            }
            if cells.row1 == cell.row {
                y_edges.push(rect.y2);
            }
        }
        if partial < FINE_FROM {
            return None;
        }
        // A query's cells are clipped to its partition, so an edge may lie
        // past the cell; a cut is useful only where points were seen.
        x_edges.retain(|&x| seen.x.0 < x && x <= seen.x.1);
        y_edges.retain(|&y| seen.y.0 < y && y <= seen.y.1);
        let (xs, ys) = (cuts(x_edges), cuts(y_edges));
        let leaves = ((xs.len() + 1).next_power_of_two(), (ys.len() + 1).next_power_of_two());
        let mut fine = Fine {
            xs,
            ys,
            leaves,
            nodes: vec![Vec::new(); 4 * leaves.0 * leaves.1],
            built_for: positions.len(),
            trial: Some((0, 0)),
        };
        for &position in positions {
            fine.add(position, held(position).0);
        }
        Some(fine)
    }

    /// Notes a point that met `checks` candidates of the cell's `queries`;
    /// when this ends the trial, whether the filing saved a quarter of the
    /// checks (less does not repay its upkeep).
    fn try_out(&mut self, checks: u64, queries: usize) -> Option<bool> {
        let (points, met) = self.trial.as_mut()?;
        *points += 1;
        *met += checks;
        if *points < FILE_AFTER {
            return None;
        }
        let kept = 4 * *met <= 3 * u64::from(*points) * queries as u64;
        self.trial = None;
        Some(kept)
    }

    /// Files the query at `position`.
    pub(crate) fn add(&mut self, position: u32, rect: &Rect) {
        self.lists(rect, |list| list.push(position));
    }

    /// Unfiles the query at `position`.
    pub(crate) fn remove(&mut self, position: u32, rect: &Rect) {
        self.lists(rect, |list| {
            if let Some(at) = list.iter().position(|&p| p == position) {
                list.swap_remove(at);
            }
        });
    }

    /// Files the query at `from` at `to` instead.
    pub(crate) fn renumber(&mut self, from: u32, to: u32, rect: &Rect) {
        self.lists(rect, |list| {
            if let Some(p) = list.iter_mut().find(|p| **p == from) {
                *p = to;
            }
        });
    }

    /// Calls `f` on each list a query over `rect` is filed in.
    fn lists(&mut self, rect: &Rect, mut f: impl FnMut(&mut Vec<u32>)) {
        let xs = spanned(self.leaves.0, slab(&self.xs, rect.x1), slab(&self.xs, rect.x2));
        let ys = spanned(self.leaves.1, slab(&self.ys, rect.y1), slab(&self.ys, rect.y2));
        let height = 2 * self.leaves.1;
        for x in xs {
            for &y in &ys {
                f(&mut self.nodes[x * height + y]);
            }
        }
    }

    /// The lists holding the queries that may hold the point (x, y) of the
    /// cell: `f` is called on each.
    #[inline]
    pub(crate) fn candidates(&self, x: f64, y: f64, mut f: impl FnMut(&[u32])) {
        let height = 2 * self.leaves.1;
        let (mut nx, y_leaf) = (self.leaves.0 + slab(&self.xs, x), self.leaves.1 + slab(&self.ys, y));
        while nx >= 1 {
            let mut ny = y_leaf;
            while ny >= 1 {
                f(&self.nodes[nx * height + ny]);
                ny /= 2;
            }
            nx /= 2;
        }
    }
}

/// The nodes of a segment tree over `leaves` leaves that together span
/// leaves `first..=last`, each once.
fn spanned(leaves: usize, first: usize, last: usize) -> Vec<usize> {
    let (mut low, mut high, mut nodes) = (first + leaves, last + leaves + 1, Vec::new());
    while low < high {
        if low & 1 == 1 {
            nodes.push(low);
            low += 1;
        }
        if high & 1 == 1 {
            high -= 1;
            nodes.push(high);
        }
        low /= 2;
        high /= 2;
    }
    nodes
}

/// Whether a query overlapping `cells` covers all of `cell` (it reaches
/// past the cell on every side, so every point of the cell is in it).
fn covers(cell: Cell, cells: &CellRect) -> bool {
    cells.col0 < cell.col && cell.col < cells.col1 && cells.row0 < cell.row && cell.row < cells.row1
}

/// The slab holding coordinate `v`: a coordinate on a cut belongs to the
/// higher slab, as one on a cell border belongs to the higher cell.
#[inline]
fn slab(cuts: &[f64], v: f64) -> usize {
    cuts.partition_point(|&cut| cut <= v)
}

/// Distinct cuts at even quantiles of the edges, about [`PER_SLAB`] edges
/// a slab and at most [`MAX_SLABS`] slabs.
fn cuts(mut edges: Vec<f64>) -> Vec<f64> {
    edges.sort_by(f64::total_cmp);
    edges.dedup();
    let slabs = (edges.len() / PER_SLAB).clamp(1, MAX_SLABS);
    let mut cuts: Vec<f64> = (1..slabs).map(|k| edges[k * edges.len() / slabs]).collect();
    cuts.dedup();
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Brute force: every query whose rectangle holds the point is a
    /// candidate, and a candidate is never counted twice.
    fn check(cell: Cell, queries: &[(Rect, CellRect)], x: f64, y: f64) -> usize {
        let positions: Vec<u32> = (0..queries.len() as u32).collect();
        let mut seen = Vec::new();
        let mut points = Seen::default();
        points.add(cell.col as f64, cell.row as f64);
        points.add(cell.col as f64 + 0.999, cell.row as f64 + 0.999);
        match Fine::build(
            cell,
            &positions,
            |p| (&queries[p as usize].0, &queries[p as usize].1),
            &points,
        ) {
            Some(fine) => fine.candidates(x, y, |list| seen.extend_from_slice(list)),
            None => seen = positions,
        }
        let before = seen.len();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), before, "a query is a candidate twice");
        for (position, (rect, _)) in queries.iter().enumerate() {
            if rect.contains(x, y) {
                assert!(
                    seen.contains(&(position as u32)),
                    "{rect:?} holds ({x}, {y}) but is no candidate"
                );
            }
        }
        before
    }

    /// Unit cells on a 10 × 10 grid: the cells a rectangle overlaps.
    fn cells_of(rect: &Rect) -> CellRect {
        let cell = |v: f64| (v.floor() as u32).min(9);
        CellRect {
            row0: cell(rect.y1),
            col0: cell(rect.x1),
            row1: cell(rect.y2),
            col1: cell(rect.x2),
        }
    }

    #[test]
    fn small_queries_in_a_hot_cell_are_met_only_near_the_point() {
        // 64 small queries tiling cell (5, 5) in an 8 × 8 pattern, one big one covering it.
        let cell = Cell { row: 5, col: 5 };
        let mut queries = Vec::new();
        for i in 0..8 {
            for j in 0..8 {
                let (x, y) = (5.0 + i as f64 / 8.0, 5.0 + j as f64 / 8.0);
                let rect = Rect::new(x, y, x + 0.1, y + 0.1).unwrap();
                queries.push((rect, cells_of(&rect)));
            }
        }
        let big = Rect::new(3.0, 3.0, 8.0, 8.0).unwrap();
        queries.push((big, cells_of(&big)));
        let candidates = check(cell, &queries, 5.53, 5.22);
        // The big query and the few small ones near the point, not all 65.
        assert!(candidates <= 8, "{candidates} candidates");
        // On a cut and on the cell's corner, too.
        check(cell, &queries, 5.5, 5.25);
        check(cell, &queries, 5.0, 5.0);
    }

    /// Meets `points` points at (x, y); the candidates the last one met.
    fn meet(filing: &mut Filing, cell: Cell, queries: &[(Rect, CellRect)], (x, y): (f64, f64), points: u32) -> usize {
        let positions: Vec<u32> = (0..queries.len() as u32).collect();
        let mut candidates = 0;
        for i in 0..points {
            // Every other point sweeps the cell, so that cuts are where points are; the last is (x, y).
            let (x, y) = if i % 2 == 1 && i + 1 < points {
                let sweep = |n: u32| f64::from(n % 64) / 64.0;
                (f64::from(cell.col) + sweep(i * 37), f64::from(cell.row) + sweep(i * 53))
            } else {
                (x, y)
            };
            candidates = 0;
            filing.meet(
                cell,
                &positions,
                |p| (&queries[p as usize].0, &queries[p as usize].1),
                (x, y),
                |list| candidates += list.len(),
            );
        }
        candidates
    }

    #[test]
    fn a_cell_is_filed_after_enough_points_and_kept_only_if_that_pays() {
        let cell = Cell { row: 5, col: 5 };
        // 32 small queries in the cell: filing pays, and is kept.
        let small: Vec<(Rect, CellRect)> = (0..32)
            .map(|i| Rect::new(5.0 + i as f64 / 32.0, 5.0, 5.0 + i as f64 / 32.0 + 0.01, 5.9).unwrap())
            .map(|rect| (rect, cells_of(&rect)))
            .collect();
        let mut filing = Filing::default();
        assert_eq!(meet(&mut filing, cell, &small, (5.5, 5.5), FILE_AFTER - 1), 32);
        assert!(meet(&mut filing, cell, &small, (5.5, 5.5), 2 * FILE_AFTER) < 8);
        assert!(matches!(filing, Filing::Filed(_)));
        // 32 queries reaching from the cell's left edge past its right side:
        // nearly every point meets them all however they are filed, so the
        // filing is dropped after its trial.
        let wide: Vec<(Rect, CellRect)> = (0..32)
            .map(|i| Rect::new(5.0 + i as f64 / 1024.0, 4.5, 7.0, 6.5).unwrap())
            .map(|rect| (rect, cells_of(&rect)))
            .collect();
        let mut filing = Filing::default();
        assert_eq!(meet(&mut filing, cell, &wide, (5.9, 5.5), 2 * FILE_AFTER), 32);
        assert!(matches!(filing, Filing::Plain(32)));
        // Until the cell's queries double or halve.
        assert!(filing.suits(64) && !filing.suits(65) && !filing.suits(15));
    }

    proptest! {
        #[test]
        fn every_query_holding_a_point_is_a_candidate(
            rects in prop::collection::vec((0.0..10.0f64, 0.0..10.0f64, 0.0..3.0f64, 0.0..3.0f64), 1..80),
            points in prop::collection::vec((0.0..1.0f64, 0.0..1.0f64), 1..20),
            on_edge in any::<bool>(),
        ) {
            let cell = Cell { row: 4, col: 4 };
            let queries: Vec<(Rect, CellRect)> = rects
                .iter()
                .map(|&(x, y, w, h)| Rect::new(x, y, (x + w).min(10.0), (y + h).min(10.0)).unwrap())
                .map(|rect| (rect, cells_of(&rect)))
                .filter(|(_, cells)| cells.contains(cell))
                .collect();
            for (i, &(dx, dy)) in points.iter().enumerate() {
                // Points on query edges too, where a cut may sit.
                let (x, y) = match queries.get(i) {
                    Some((rect, _)) if on_edge => (rect.x2.clamp(4.0, 4.999), rect.y1.clamp(4.0, 4.999)),
                    _ => (4.0 + dx, 4.0 + dy),
                };
                check(cell, &queries, x, y);
            }
        }
    }
}
