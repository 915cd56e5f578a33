//! The global index: which partition owns each cell and which worker owns
//! each partition; the initial plan; point and range-query routing
//! (Algorithm 1); and applying plan changes.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::common::Error;

use super::geometry::{Cell, CellRect, Grid, OutOfBounds};
use super::ids::PartitionId;

/// Where a partition lies and which worker owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionInfo {
    /// Its cells.
    pub rect: CellRect,
    /// Its owner worker: the only one that holds it, or the first of the
    /// holders of a shared partition ([`GlobalIndex::replicas`]).
    pub owner: usize,
}

/// The direction a split line runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Axis {
    /// A horizontal line between two rows: the parts are the rows above and below.
    Rows,
    /// A vertical line between two columns: the parts are the columns left and right.
    Columns,
}

/// A line through a partition: the first part is its rows (or columns)
/// `0..=after`, counted from the partition's first, the second the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitLine {
    /// Direction.
    pub axis: Axis,
    /// Last row (or column) of the first part, relative to the partition.
    pub after: u32,
}

impl Axis {
    /// How many lines `rect` has across which a line of this axis runs:
    /// its rows, or its columns.
    pub(crate) fn lines(self, rect: &CellRect) -> u32 {
        match self {
            Axis::Rows => rect.rows(),
            Axis::Columns => rect.cols(),
        }
    }
}

impl SplitLine {
    /// The two parts of `rect`, or `None` if the line is not inside it.
    pub fn parts(&self, rect: &CellRect) -> Option<(CellRect, CellRect)> {
        match self.axis {
            Axis::Rows if self.after + 1 < rect.rows() => {
                let cut = rect.row0 + self.after;
                Some((CellRect { row1: cut, ..*rect }, CellRect { row0: cut + 1, ..*rect }))
            }
            Axis::Columns if self.after + 1 < rect.cols() => {
                let cut = rect.col0 + self.after;
                Some((CellRect { col1: cut, ..*rect }, CellRect { col0: cut + 1, ..*rect }))
            }
            _ => None,
        }
    }
}

/// A change to the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PlanChange {
    /// Give partition `id` to worker `to`.
    Move {
        /// The partition.
        id: PartitionId,
        /// The new owner.
        to: usize,
    },
    /// Replace partition `id` by its two parts along `line`, with new ids.
    Split {
        /// The partition.
        id: PartitionId,
        /// Where to cut.
        line: SplitLine,
        /// Id and owner of the first part (rows/columns `0..=after`).
        first: (PartitionId, usize),
        /// Id and owner of the second part.
        second: (PartitionId, usize),
    },
    /// Replace two partitions of one owner whose union is a rectangle by that
    /// rectangle, with a new id.
    Merge {
        /// One partition.
        first: PartitionId,
        /// The other.
        second: PartitionId,
        /// Id of the union.
        into: PartitionId,
    },
    /// Worker `from`, a holder of partition `id`, hands `weight` of its
    /// weight to worker `with`, which becomes a holder if it was not one
    /// (it then gets a copy of the partition's queries). A partition's
    /// points are dealt among its holders in proportion to their weights
    /// ([`SHARE_WEIGHT`] in all): balance below the cell, as a hot cell's
    /// points spread over several workers.
    Share {
        /// The partition (not split nor merged while shared).
        id: PartitionId,
        /// The worker that gets the weight.
        with: usize,
        /// The holder that gives it.
        from: usize,
        /// How much: more than 0 and less than `from`'s weight.
        weight: u32,
    },
    /// Worker `from` stops holding shared partition `id`: its copy joins
    /// the owner's and so does its weight (the next holder becomes the
    /// owner if `from` owned it).
    Unshare {
        /// The shared partition.
        id: PartitionId,
        /// The holder that leaves.
        from: usize,
    },
}

/// The weight of a whole partition, dealt among its holders.
pub const SHARE_WEIGHT: u32 = 1 << 20;

/// The holders of a shared partition besides its owner, and every holder's
/// weight (the owner's first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Shares {
    replicas: Vec<usize>,
    weights: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Slot {
    id: PartitionId,
    owner: u32,
    // Whether other workers hold the partition too, so that routing a point
    // of an unshared one needs no map lookup.
    shared: bool,
    // The partition's rectangle, so Algorithm 1 needs no map lookup.
    rect: CellRect,
}

impl PlanChange {
    /// The same change with every worker `placeholder` names replaced by
    /// `worker`: an offer made before its partner was known.
    pub(crate) fn with_worker(mut self, placeholder: usize, worker: usize) -> Self {
        let name = |named: &mut usize| {
            if *named == placeholder {
                *named = worker;
            }
        };
        match &mut self {
            PlanChange::Move { to, .. } => name(to),
            PlanChange::Split { first, second, .. } => {
                name(&mut first.1);
                name(&mut second.1);
            }
            PlanChange::Share { with, from, .. } => {
                name(with);
                name(from);
            }
            PlanChange::Merge { .. } | PlanChange::Unshare { .. } => {}
        }
        self
    }

    /// The partitions the change reads or replaces.
    pub fn touched(&self) -> Vec<PartitionId> {
        match *self {
            PlanChange::Move { id, .. }
            | PlanChange::Split { id, .. }
            | PlanChange::Share { id, .. }
            | PlanChange::Unshare { id, .. } => vec![id],
            PlanChange::Merge { first, second, .. } => vec![first, second],
        }
    }
}

/// Cell → partition → owner, for one grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalIndex {
    grid: Grid,
    // Row-major, one entry per cell, with the owner (and rectangle) beside
    // the id so that routing a point is a single array read.
    cells: Vec<Slot>,
    partitions: BTreeMap<PartitionId, PartitionInfo>,
    // The holders besides the owner of each shared partition, in the order
    // they joined, and their weights.
    shares: BTreeMap<PartitionId, Shares>,
}

/// The most partitions per worker [`GlobalIndex::fine`] starts from: one
/// cell each on a 64 × 64 grid from 16 workers on, blocks of a few cells
/// below (finer starts spend more on each query's copies than their
/// balance wins back at 2–4 workers; `bench/results/swarm.md`).
pub const FINE_PER_WORKER: usize = 256;

/// The owners of `bx × by` blocks, row by row: block (column c, row r) goes
/// to worker (c + r·s) mod W with s = ⌊√W⌋, so that any s × s square of
/// blocks has s² different owners and a hotspot, wherever it moves, is
/// spread over as many workers as it covers blocks; a worker that already
/// has its share (⌊n/W⌋, or one more for the first n mod W workers) passes
/// the block to the next one that has not. (A round-robin walk along the
/// rows gives each worker whole columns when the workers divide a row's
/// blocks: a hotspot crossing the space at 64 workers then loaded its
/// columns' two workers, 1.5× the mean over the run against 1.26 dealt
/// along diagonals, with no rebalancing.)
pub(crate) fn deal(bx: usize, by: usize, workers: usize) -> Vec<usize> {
    let n = bx * by;
    let stride = (workers as f64).sqrt().floor().max(1.0) as usize;
    let quota = |w: usize| n / workers + usize::from(w < n % workers);
    let mut held = vec![0usize; workers];
    // The workers below their share.
    let mut open: BTreeSet<usize> = (0..workers).filter(|&w| quota(w) > 0).collect();
    (0..n)
        .map(|i| {
            let first = (i % bx + (i / bx) * stride) % workers;
            let owner = *open
                .range(first..)
                .next()
                .or_else(|| open.first())
                .expect("the shares add up to the blocks");
            held[owner] += 1;
            if held[owner] == quota(owner) {
                open.remove(&owner);
            }
            owner
        })
        .collect()
}

impl GlobalIndex {
    /// The initial plan for `workers` workers: starting from one partition
    /// covering the space, split the partition of largest area into two
    /// equal halves across its longer side (never below one cell) until there
    /// is one partition per worker or nothing can be split. Returns the index
    /// and the first id it left unused.
    pub fn initial(grid: Grid, workers: usize) -> Result<(Self, PartitionId), Error> {
        if workers == 0 {
            return Err(Error::invalid("workers", "need at least one"));
        }
        let (cell_width, cell_height) = {
            let b = grid.bounds();
            (
                (b.x2 - b.x1) / f64::from(grid.columns()),
                (b.y2 - b.y1) / f64::from(grid.rows()),
            )
        };
        let mut parts: BTreeMap<PartitionId, CellRect> = BTreeMap::from([(0, grid.all())]);
        let mut next_id: PartitionId = 1;
        while parts.len() < workers {
            // Largest area first, then smallest id; only splittable ones.
            let Some((&id, &rect)) = parts
                .iter()
                .filter(|(_, rect)| rect.area() > 1)
                .max_by(|(id_a, a), (id_b, b)| a.area().cmp(&b.area()).then(id_b.cmp(id_a)))
            else {
                break;
            };
            let width = f64::from(rect.cols()) * cell_width;
            let height = f64::from(rect.rows()) * cell_height;
            let across_rows = (height > width && rect.rows() > 1) || rect.cols() == 1;
            let line = if across_rows {
                SplitLine {
                    axis: Axis::Rows,
                    after: rect.rows() / 2 - 1,
                }
            } else {
                SplitLine {
                    axis: Axis::Columns,
                    after: rect.cols() / 2 - 1,
                }
            };
            let (first, second) = line.parts(&rect).expect("a halving line lies inside");
            parts.remove(&id);
            parts.insert(next_id, first);
            parts.insert(next_id + 1, second);
            next_id += 2;
        }
        // Owners in reading order of the partitions' first cells.
        let mut order: Vec<(PartitionId, CellRect)> = parts.into_iter().collect();
        order.sort_by_key(|(_, rect)| (rect.row0, rect.col0));
        let mut index = GlobalIndex::unfilled(grid);
        for (owner, (id, rect)) in order.into_iter().enumerate() {
            index.insert(id, PartitionInfo { rect, owner });
        }
        Ok((index, next_id))
    }

    /// A fine static plan: `per_worker × workers` cell-aligned blocks in a
    /// bx × by block grid (block boundaries at floor(i·C/b) cells), dealt
    /// along diagonals: block (c, r) to worker (c + r·⌊√W⌋) mod W, or the
    /// next one below its share, so that neighbouring blocks belong to
    /// different workers and a hotspot, wherever it goes, is shared by as
    /// many workers as it covers blocks. Returns the index and the first id
    /// it left unused.
    pub fn blocks(grid: Grid, workers: usize, per_worker: usize) -> Result<(Self, PartitionId), Error> {
        if workers == 0 {
            return Err(Error::invalid("workers", "need at least one"));
        }
        if per_worker == 0 {
            return Err(Error::invalid("partitions per worker", "need at least one"));
        }
        let (columns, rows) = (grid.columns() as usize, grid.rows() as usize);
        let n = per_worker.saturating_mul(workers);
        // bx · by = n exactly, so every worker gets the same number of blocks;
        // among those, blocks nearest to square in space, as range queries
        // then touch the fewest of them. Ties (within rounding) go to more
        // columns of blocks.
        let b = grid.bounds();
        let skew = |bx: usize, by: usize| ((b.x2 - b.x1) * by as f64 / ((b.y2 - b.y1) * bx as f64)).ln().abs();
        let mut best: Option<(usize, usize, f64)> = None;
        for bx in (1..=columns.min(n)).filter(|&bx| n.is_multiple_of(bx) && n / bx <= rows) {
            let s = skew(bx, n / bx);
            if best.is_none_or(|(_, _, t)| s <= t + 1e-9) {
                best = Some((bx, n / bx, s));
            }
        }
        let Some((bx, by, _)) = best else {
            return Err(Error::invalid(
                "partitions per worker",
                format!(
                    "{per_worker} per worker x {workers} workers = {n} blocks cannot be laid out as \
                     bx x by blocks on a {columns}x{rows} grid"
                ),
            ));
        };
        Ok(Self::dealt(grid, workers, bx, by))
    }

    /// The default start: a plan as fine as the grid allows, so that the
    /// first epochs are as balanced as a plan of one cell per partition
    /// whatever the load, and SWARM then moves, shares and merges from
    /// there. One cell per partition when the grid has at most
    /// [`FINE_PER_WORKER`] cells per worker, else about that many blocks
    /// of cells per worker, as near square as the grid allows; dealt as in
    /// [`blocks`](Self::blocks) (the workers need not divide the blocks:
    /// some hold one more).
    /// Returns the index and the first id it left unused.
    pub fn fine(grid: Grid, workers: usize) -> Result<(Self, PartitionId), Error> {
        if workers == 0 {
            return Err(Error::invalid("workers", "need at least one"));
        }
        let (columns, rows) = (u64::from(grid.columns()), u64::from(grid.rows()));
        let most = (FINE_PER_WORKER as u64).saturating_mul(workers as u64);
        let (bx, by) = if columns * rows <= most {
            (columns, rows)
        } else {
            // Blocks of about `columns · rows / most` cells, as many across
            // as the cells' proportions ask.
            let side = ((columns * rows) as f64 / most as f64).sqrt();
            let bx = ((columns as f64 / side).floor() as u64).clamp(1, columns);
            (bx, (most / bx).clamp(1, rows))
        };
        Ok(Self::dealt(grid, workers, bx as usize, by as usize))
    }

    /// `bx × by` blocks (boundaries at floor(i·C/b) cells) owned as
    /// [`deal`] says; returns the index and the first id it left unused.
    fn dealt(grid: Grid, workers: usize, bx: usize, by: usize) -> (Self, PartitionId) {
        let (columns, rows) = (grid.columns() as usize, grid.rows() as usize);
        // Cell `i · cells / blocks`, where block `i` starts (u64: no overflow).
        let edge = |i: usize, cells: usize, blocks: usize| (i as u64 * cells as u64 / blocks as u64) as u32;
        let mut index = GlobalIndex::unfilled(grid);
        for (i, owner) in deal(bx, by, workers).into_iter().enumerate() {
            let (bc, br) = (i % bx, i / bx);
            let rect = CellRect {
                row0: edge(br, rows, by),
                col0: edge(bc, columns, bx),
                row1: edge(br + 1, rows, by) - 1,
                col1: edge(bc + 1, columns, bx) - 1,
            };
            index.insert(i as PartitionId, PartitionInfo { rect, owner });
        }
        (index, (bx * by) as PartitionId)
    }

    // An index whose cells all point to a placeholder partition 0 that is
    // not in `partitions`: callers `insert` a covering before handing it out.
    fn unfilled(grid: Grid) -> Self {
        GlobalIndex {
            cells: vec![
                Slot {
                    id: 0,
                    owner: 0,
                    shared: false,
                    rect: grid.all()
                };
                grid.cell_count()
            ],
            grid,
            partitions: BTreeMap::new(),
            shares: BTreeMap::new(),
        }
    }

    fn insert(&mut self, id: PartitionId, info: PartitionInfo) {
        let columns = self.grid.columns() as usize;
        let shared = self.shares.contains_key(&id);
        for row in info.rect.row0..=info.rect.row1 {
            let start = row as usize * columns;
            self.cells[start + info.rect.col0 as usize..=start + info.rect.col1 as usize].fill(Slot {
                id,
                owner: info.owner as u32,
                shared,
                rect: info.rect,
            });
        }
        self.partitions.insert(id, info);
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// All partitions by id.
    pub fn partitions(&self) -> &BTreeMap<PartitionId, PartitionInfo> {
        &self.partitions
    }

    /// A partition's rectangle and owner.
    pub fn info(&self, id: PartitionId) -> Option<&PartitionInfo> {
        self.partitions.get(&id)
    }

    /// The partition of a cell and its owner. O(1).
    #[inline]
    pub fn at(&self, cell: Cell) -> (PartitionId, usize) {
        let slot = self.cells[self.grid.index(cell)];
        (slot.id, slot.owner as usize)
    }

    /// The partition of a cell, its owner, and whether it is shared. O(1).
    #[inline]
    pub(crate) fn at_shared(&self, cell: Cell) -> (PartitionId, usize, bool) {
        let slot = self.cells[self.grid.index(cell)];
        (slot.id, slot.owner as usize, slot.shared)
    }

    /// The workers that hold a shared partition besides its owner, in the
    /// order they joined (empty for a partition that is not shared).
    pub fn replicas(&self, id: PartitionId) -> &[usize] {
        self.shares.get(&id).map_or(&[], |shares| shares.replicas.as_slice())
    }

    /// The weights of the holders of partition `id`, in [`holders`](Self::holders)'
    /// order: [`SHARE_WEIGHT`] in all.
    pub fn weights(&self, id: PartitionId) -> &[u32] {
        const WHOLE: &[u32] = &[SHARE_WEIGHT];
        self.shares.get(&id).map_or(WHOLE, |shares| shares.weights.as_slice())
    }

    /// The weight `worker` holds of partition `id` (0 if it holds none).
    pub fn weight_of(&self, id: PartitionId, worker: usize) -> u32 {
        self.holders(id)
            .zip(self.weights(id))
            .find(|(holder, _)| *holder == worker)
            .map_or(0, |(_, &weight)| weight)
    }

    /// Every worker that holds partition `id`: its owner, then its replicas
    /// (empty for an unknown id).
    pub fn holders(&self, id: PartitionId) -> impl Iterator<Item = usize> + '_ {
        self.partitions
            .get(&id)
            .map(|info| info.owner)
            .into_iter()
            .chain(self.replicas(id).iter().copied())
    }

    /// The shared partitions, by id.
    pub fn shared(&self) -> impl Iterator<Item = PartitionId> + '_ {
        self.shares.keys().copied()
    }

    /// The partition and owner of a point. O(1).
    #[inline]
    pub fn route_point(&self, x: f64, y: f64, policy: OutOfBounds) -> Result<(PartitionId, usize), Error> {
        Ok(self.at(self.grid.cell_of(x, y, policy)?))
    }

    /// The partitions a range of cells overlaps (Algorithm 1), in increasing
    /// id order. Starting from the range's first cell, each visited cell
    /// adds its partition and schedules the cell just right of that
    /// partition on the cell's row and the cell just below it on the cell's
    /// column, so whole partitions are skipped rather than scanned.
    pub fn partitions_overlapping(&self, range: &CellRect) -> Vec<PartitionId> {
        let mut result = Vec::new();
        let mut stack = vec![Cell {
            row: range.row0,
            col: range.col0,
        }];
        // Cells already visited, one bit per cell of the range.
        let width = range.cols() as usize;
        let mut seen = vec![0u64; (range.area() as usize).div_ceil(64)];
        while let Some(cell) = stack.pop() {
            if !range.contains(cell) {
                continue;
            }
            let bit = (cell.row - range.row0) as usize * width + (cell.col - range.col0) as usize;
            if seen[bit / 64] & (1 << (bit % 64)) != 0 {
                continue;
            }
            seen[bit / 64] |= 1 << (bit % 64);
            let slot = self.cells[self.grid.index(cell)];
            result.push(slot.id);
            stack.push(Cell {
                row: cell.row,
                col: slot.rect.col1 + 1,
            });
            stack.push(Cell {
                row: slot.rect.row1 + 1,
                col: cell.col,
            });
        }
        result.sort_unstable();
        result.dedup();
        result
    }

    /// The partitions a range of cells overlaps, by scanning every cell of
    /// the range: the reference Algorithm 1 is tested and benchmarked against.
    #[doc(hidden)]
    pub fn partitions_overlapping_by_scan(&self, range: &CellRect) -> Vec<PartitionId> {
        let mut result: Vec<PartitionId> = (range.row0..=range.row1)
            .flat_map(|row| (range.col0..=range.col1).map(move |col| Cell { row, col }))
            .map(|cell| self.at(cell).0)
            .collect();
        result.sort_unstable();
        result.dedup();
        result
    }

    /// Applies a change, or explains why it cannot be applied (the index is
    /// then unchanged).
    pub fn apply(&mut self, change: &PlanChange) -> Result<(), Error> {
        match *change {
            PlanChange::Move { id, to } => self.apply_move(id, to),
            PlanChange::Share { id, with, from, weight } => self.apply_share(id, with, from, weight),
            PlanChange::Unshare { id, from } => self.apply_unshare(id, from),
            PlanChange::Split {
                id,
                line,
                first,
                second,
            } => self.apply_split(id, line, first, second),
            PlanChange::Merge { first, second, into } => self.apply_merge(first, second, into),
        }
    }

    /// The partition a change names, which must exist.
    fn known(&self, id: &PartitionId) -> Result<PartitionInfo, Error> {
        self.partitions
            .get(id)
            .copied()
            .ok_or_else(|| bad_change(format!("no partition {id}")))
    }

    /// A new id a change gives, which must not be in use.
    fn fresh(&self, id: &PartitionId) -> Result<(), Error> {
        if self.partitions.contains_key(id) {
            Err(bad_change(format!("partition id {id} is in use")))
        } else {
            Ok(())
        }
    }

    /// A partition to split or merge, which must not be shared: its
    /// holders' copies would have no single owner to go to.
    fn unshared(&self, id: &PartitionId) -> Result<(), Error> {
        if self.shares.contains_key(id) {
            Err(bad_change(format!("partition {id} is shared: unshare it first")))
        } else {
            Ok(())
        }
    }

    /// [`PlanChange::Move`]: the owner changes, the rectangle stays.
    fn apply_move(&mut self, id: PartitionId, to: usize) -> Result<(), Error> {
        let info = self.known(&id)?;
        if self.replicas(id).contains(&to) {
            return Err(bad_change(format!("worker {to} holds partition {id} already")));
        }
        self.insert(id, PartitionInfo { owner: to, ..info });
        Ok(())
    }

    /// [`PlanChange::Share`]: weight passes from one holder to another,
    /// which joins the holders if it was not one.
    fn apply_share(&mut self, id: PartitionId, with: usize, from: usize, weight: u32) -> Result<(), Error> {
        let info = self.known(&id)?;
        let given = self.weight_of(id, from);
        if given == 0 || with == from || weight == 0 || weight >= given {
            return Err(bad_change(format!(
                "worker {from} (weight {given} of partition {id}) cannot give {weight} of it to worker {with}"
            )));
        }
        let holders: Vec<usize> = self.holders(id).collect();
        let shares = self.shares.entry(id).or_insert_with(|| Shares {
            replicas: Vec::new(),
            weights: vec![SHARE_WEIGHT],
        });
        let taker = match holders.iter().position(|&holder| holder == with) {
            Some(position) => position,
            None => {
                shares.replicas.push(with);
                shares.weights.push(0);
                holders.len()
            }
        };
        let giver = holders
            .iter()
            .position(|&holder| holder == from)
            .expect("weighed above");
        shares.weights[giver] -= weight;
        shares.weights[taker] += weight;
        self.insert(id, info);
        Ok(())
    }

    /// [`PlanChange::Unshare`]: a holder leaves and its weight goes to the
    /// owner; the partition is whole again once no replica is left.
    fn apply_unshare(&mut self, id: PartitionId, from: usize) -> Result<(), Error> {
        let info = self.known(&id)?;
        let shares = self
            .shares
            .get_mut(&id)
            .ok_or_else(|| bad_change(format!("partition {id} is not shared")))?;
        let owner = if from == info.owner {
            // The next holder owns it, with the owner's weight too.
            let next = shares.replicas.remove(0);
            let weight = shares.weights.remove(0);
            shares.weights[0] += weight;
            next
        } else {
            let position = shares
                .replicas
                .iter()
                .position(|&holder| holder == from)
                .ok_or_else(|| bad_change(format!("worker {from} does not hold partition {id}")))?;
            shares.replicas.remove(position);
            let weight = shares.weights.remove(position + 1);
            shares.weights[0] += weight;
            info.owner
        };
        if shares.replicas.is_empty() {
            self.shares.remove(&id);
        }
        self.insert(id, PartitionInfo { owner, ..info });
        Ok(())
    }

    /// [`PlanChange::Split`]: one partition becomes its two parts, under
    /// new ids.
    fn apply_split(
        &mut self,
        id: PartitionId,
        line: SplitLine,
        first: (PartitionId, usize),
        second: (PartitionId, usize),
    ) -> Result<(), Error> {
        let info = self.known(&id)?;
        self.unshared(&id)?;
        self.fresh(&first.0)?;
        self.fresh(&second.0)?;
        if first.0 == second.0 {
            return Err(bad_change(format!("both parts of {id} would be {}", first.0)));
        }
        let (a, b) = line
            .parts(&info.rect)
            .ok_or_else(|| bad_change(format!("{line:?} is not inside partition {id} ({:?})", info.rect)))?;
        self.partitions.remove(&id);
        self.insert(
            first.0,
            PartitionInfo {
                rect: a,
                owner: first.1,
            },
        );
        self.insert(
            second.0,
            PartitionInfo {
                rect: b,
                owner: second.1,
            },
        );
        Ok(())
    }

    /// [`PlanChange::Merge`]: two adjacent partitions of one owner become
    /// their union, under a new id.
    fn apply_merge(&mut self, first: PartitionId, second: PartitionId, into: PartitionId) -> Result<(), Error> {
        let (a, b) = (self.known(&first)?, self.known(&second)?);
        self.unshared(&first)?;
        self.unshared(&second)?;
        if first == second {
            return Err(bad_change(format!("cannot merge partition {first} with itself")));
        }
        self.fresh(&into)?;
        if a.owner != b.owner {
            return Err(bad_change(format!(
                "partitions {first} and {second} have different owners ({} and {})",
                a.owner, b.owner
            )));
        }
        let rect = a
            .rect
            .union_if_rectangle(&b.rect)
            .ok_or_else(|| bad_change(format!("partitions {first} and {second} do not form a rectangle")))?;
        self.partitions.remove(&first);
        self.partitions.remove(&second);
        self.insert(into, PartitionInfo { rect, owner: a.owner });
        Ok(())
    }

    /// Checks that every cell belongs to exactly one partition, whose
    /// rectangle holds it, and that every partition's cells point to it.
    #[doc(hidden)]
    pub fn check_covering(&self) -> Result<(), String> {
        let mut covered = 0u64;
        for (&id, info) in &self.partitions {
            covered += info.rect.area();
            for row in info.rect.row0..=info.rect.row1 {
                for col in info.rect.col0..=info.rect.col1 {
                    let slot = self.cells[self.grid.index(Cell { row, col })];
                    let (at, owner) = (slot.id, slot.owner as usize);
                    let shared = self.shares.contains_key(&id);
                    if at != id || owner != info.owner || slot.rect != info.rect || slot.shared != shared {
                        return Err(format!(
                            "cell ({row}, {col}) of partition {id} points to {at} (owner {owner})"
                        ));
                    }
                }
            }
        }
        for (id, shares) in &self.shares {
            let holders: Vec<usize> = self.holders(*id).collect();
            let mut distinct = holders.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let weights = &shares.weights;
            let whole = weights.iter().map(|&w| u64::from(w)).sum::<u64>() == u64::from(SHARE_WEIGHT);
            if shares.replicas.is_empty()
                || !self.partitions.contains_key(id)
                || distinct.len() != holders.len()
                || weights.len() != holders.len()
                || weights.contains(&0)
                || !whole
            {
                return Err(format!(
                    "shared partition {id} has holders {holders:?} weighing {weights:?}"
                ));
            }
        }
        if covered != self.grid.cell_count() as u64 {
            return Err(format!(
                "partitions cover {covered} cells of {}",
                self.grid.cell_count()
            ));
        }
        Ok(())
    }
}

/// Why a plan change was refused, in the error every refusal shares.
fn bad_change(reason: String) -> Error {
    Error::invalid("plan change", reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::geometry::Rect;

    #[test]
    fn an_offer_names_its_partner_wherever_the_placeholder_stood() {
        let (placeholder, partner) = (usize::MAX, 3);
        let line = SplitLine {
            axis: Axis::Rows,
            after: 1,
        };
        let named = |change: PlanChange| change.with_worker(placeholder, partner);
        assert_eq!(
            named(PlanChange::Move { id: 7, to: placeholder }),
            PlanChange::Move { id: 7, to: partner }
        );
        let split = |second| PlanChange::Split {
            id: 7,
            line,
            first: (8, 0),
            second: (9, second),
        };
        assert_eq!(named(split(placeholder)), split(partner));
        // A cut that stays names no one.
        assert_eq!(named(split(0)), split(0));
        let share = |with| PlanChange::Share {
            id: 7,
            with,
            from: 0,
            weight: 2,
        };
        assert_eq!(named(share(placeholder)), share(partner));
        let merge = PlanChange::Merge {
            first: 1,
            second: 2,
            into: 3,
        };
        assert_eq!(named(merge.clone()), merge);
    }

    fn grid(columns: u32, rows: u32) -> Grid {
        Grid::new(
            Rect::new(0.0, 0.0, f64::from(columns), f64::from(rows)).unwrap(),
            columns,
            rows,
        )
        .unwrap()
    }

    #[test]
    fn the_deal_is_even_and_any_small_square_has_different_owners() {
        for (bx, by, workers) in [
            (64, 64, 64),
            (64, 64, 16),
            (32, 16, 4),
            (16, 16, 2),
            (10, 7, 3),
            (5, 13, 8),
            (3, 3, 9),
        ] {
            let owners = deal(bx, by, workers);
            let n = bx * by;
            let mut held = vec![0; workers];
            for &w in &owners {
                held[w] += 1;
            }
            let expected: Vec<usize> = (0..workers)
                .map(|w| n / workers + usize::from(w < n % workers))
                .collect();
            assert_eq!(held, expected, "{bx}x{by}, {workers} workers");
            // Where the workers divide a row's blocks no worker is passed
            // over: every s x s square then has s^2 owners.
            let s = (workers as f64).sqrt() as usize;
            if bx % workers == 0 {
                for (r0, c0) in (0..=by - s).flat_map(|r| (0..=bx - s).map(move |c| (r, c))) {
                    let mut seen: Vec<usize> = (0..s * s).map(|k| owners[(r0 + k / s) * bx + c0 + k % s]).collect();
                    seen.sort_unstable();
                    seen.dedup();
                    assert_eq!(
                        seen.len(),
                        s * s,
                        "{bx}x{by}, {workers} workers, square at ({r0}, {c0})"
                    );
                }
            }
        }
    }

    #[test]
    fn blocks_cover_every_cell_once_and_share_blocks_equally() {
        for (columns, rows, workers, per_worker) in [
            (10, 7, 3, 2),
            (10, 7, 2, 5),
            (10, 7, 1, 1),
            (64, 64, 4, 16),
            (5, 13, 3, 4),
            (1, 9, 3, 3),
        ] {
            let (index, next) = GlobalIndex::blocks(grid(columns, rows), workers, per_worker).unwrap();
            let case = format!("{columns}x{rows}, {workers} workers, {per_worker} per worker");
            index.check_covering().unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(next, (workers * per_worker) as PartitionId, "{case}");
            assert!(index.partitions().keys().copied().eq(0..next), "{case}");
            let mut owned = vec![0; workers];
            for info in index.partitions().values() {
                owned[info.owner] += 1;
            }
            assert_eq!(owned, vec![per_worker; workers], "{case}");
        }
    }

    #[test]
    fn blocks_are_square_and_neighbours_have_different_owners() {
        let (index, _) = GlobalIndex::blocks(grid(64, 64), 4, 16).unwrap();
        for info in index.partitions().values() {
            assert_eq!((info.rect.cols(), info.rect.rows()), (8, 8), "{info:?}");
        }
        for row in 0..64 {
            for col in 0..64 {
                let here = index.at(Cell { row, col });
                for next in [Cell { row, col: col + 1 }, Cell { row: row + 1, col }] {
                    if next.row < 64 && next.col < 64 {
                        let there = index.at(next);
                        assert!(here.0 == there.0 || here.1 != there.1, "({row}, {col}) and {next:?}");
                    }
                }
            }
        }
        // 1×2 and 2×1 blocks are equally skewed: the tie goes to more columns.
        let (index, _) = GlobalIndex::blocks(grid(8, 8), 2, 1).unwrap();
        assert_eq!(index.info(1).unwrap().rect.col0, 4);
    }

    #[test]
    fn the_fine_start_covers_every_cell_once_as_finely_as_allowed() {
        for (columns, rows, workers) in [
            (64, 64, 2),
            (64, 64, 3),
            (64, 64, 16),
            (64, 32, 64),
            (10, 7, 3),
            (1, 9, 4),
            (300, 200, 2),
            (5, 5, 100),
        ] {
            let (index, next) = GlobalIndex::fine(grid(columns, rows), workers).unwrap();
            let case = format!("{columns}x{rows}, {workers} workers");
            index.check_covering().unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(index.partitions().keys().copied().eq(0..next), "{case}");
            let cells = (columns * rows) as usize;
            let most = FINE_PER_WORKER * workers;
            // One cell each when allowed, else at most `most` blocks, within
            // a row of blocks of it.
            let blocks = index.partitions().len();
            if cells <= most {
                assert_eq!(blocks, cells, "{case}");
            } else {
                assert!(blocks <= most && 2 * blocks >= most, "{case}: {blocks} blocks");
            }
            // Every worker holds its share, within one.
            let mut owned = vec![0usize; workers];
            for info in index.partitions().values() {
                owned[info.owner] += 1;
            }
            let (least, most_owned) = (owned.iter().min().unwrap(), owned.iter().max().unwrap());
            assert!(most_owned - least <= 1, "{case}: {owned:?}");
        }
        assert!(GlobalIndex::fine(grid(4, 4), 0).is_err());
    }

    #[test]
    fn sharing_moves_weight_between_holders_and_unsharing_hands_it_back() {
        let (mut index, _) = GlobalIndex::initial(grid(4, 4), 2).unwrap();
        let (id, owner) = index.at(Cell { row: 0, col: 0 });
        let other = 1 - owner;
        let refused = |index: &mut GlobalIndex, change: PlanChange| {
            let before = index.clone();
            assert!(index.apply(&change).is_err(), "{change:?}");
            assert_eq!(*index, before, "a refused change changes nothing");
        };
        let share = |with, from, weight| PlanChange::Share { id, with, from, weight };
        assert_eq!(index.weights(id), &[SHARE_WEIGHT]);
        // The giver must hold more than it gives, to someone else.
        refused(&mut index, share(owner, owner, 1));
        refused(&mut index, share(other, owner, SHARE_WEIGHT));
        refused(&mut index, share(other, owner, 0));
        refused(&mut index, share(owner, other, 1));
        refused(&mut index, PlanChange::Unshare { id, from: owner });
        index.apply(&share(other, owner, SHARE_WEIGHT / 4)).unwrap();
        index.check_covering().unwrap();
        assert_eq!(index.holders(id).collect::<Vec<_>>(), vec![owner, other]);
        assert_eq!(index.weights(id), &[SHARE_WEIGHT / 4 * 3, SHARE_WEIGHT / 4]);
        assert!(index.at_shared(Cell { row: 0, col: 0 }).2);
        // Between holders the weight shifts; a third holder joins.
        index.apply(&share(owner, other, SHARE_WEIGHT / 8)).unwrap();
        index.apply(&share(2, owner, SHARE_WEIGHT / 2)).unwrap();
        assert_eq!(
            index.weights(id),
            &[SHARE_WEIGHT * 3 / 8, SHARE_WEIGHT / 8, SHARE_WEIGHT / 2]
        );
        index.check_covering().unwrap();
        // A shared partition is neither split, merged nor moved to a holder.
        let line = SplitLine {
            axis: Axis::Rows,
            after: 0,
        };
        refused(
            &mut index,
            PlanChange::Split {
                id,
                line,
                first: (50, owner),
                second: (51, owner),
            },
        );
        refused(&mut index, PlanChange::Move { id, to: other });
        // The owner leaving makes the next holder the owner, with its weight.
        index.apply(&PlanChange::Unshare { id, from: owner }).unwrap();
        assert_eq!(index.holders(id).collect::<Vec<_>>(), vec![other, 2]);
        assert_eq!(index.weights(id), &[SHARE_WEIGHT / 2, SHARE_WEIGHT / 2]);
        index.apply(&PlanChange::Unshare { id, from: 2 }).unwrap();
        assert_eq!(index.holders(id).collect::<Vec<_>>(), vec![other]);
        assert_eq!(index.weights(id), &[SHARE_WEIGHT]);
        assert!(index.shared().next().is_none() && !index.at_shared(Cell { row: 0, col: 0 }).2);
        index.check_covering().unwrap();
        refused(&mut index, PlanChange::Unshare { id, from: other });
    }

    #[test]
    fn impossible_blocks_are_errors() {
        for (columns, rows, workers, per_worker) in [(4, 4, 4, 16), (4, 4, 4, 0), (4, 4, 0, 4), (4, 4, 1, 5)] {
            let error = GlobalIndex::blocks(grid(columns, rows), workers, per_worker).unwrap_err();
            assert!(matches!(error, Error::Invalid { .. }), "{error}");
        }
        assert!(GlobalIndex::blocks(grid(4, 4), usize::MAX, 2).is_err());
    }
}
