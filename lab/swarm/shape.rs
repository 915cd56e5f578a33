//! A spatial workload's shape over a grid, epoch by epoch: the share of
//! an epoch's points its busiest cell holds, the share of the cells ever
//! used, and how often the busiest cell changes. These say whether a
//! static plan can balance it.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::input::SpatialInput;
use equipoise::swarm::{Grid, Item, OutOfBounds};

/// The shape of a workload over a grid, epochs of `batch` lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadShape {
    /// Epochs with points.
    pub epochs: usize,
    /// The busiest cell's share of its epoch's points: median, 90th
    /// percentile and most, over the epochs.
    pub top_cell_share: [f64; 3],
    /// The share of the grid's cells that ever received a point.
    pub cells_used: f64,
    /// Epochs whose busiest cell is not the previous epoch's.
    pub top_cell_changes: usize,
    /// Distinct cells that were an epoch's busiest.
    pub top_cells: usize,
}

/// The shape of `input`'s points over `grid`, in epochs of `batch` lines.
pub fn shape<P, Q>(input: &SpatialInput<P, Q>, grid: &Grid, batch: u64) -> WorkloadShape {
    let batch = batch.max(1);
    let mut used = HashSet::new();
    let (mut shares, mut tops) = (Vec::new(), Vec::new());
    let mut counts = vec![0u32; grid.cell_count()];
    let mut epoch = 0;
    let close = |counts: &mut Vec<u32>, shares: &mut Vec<f64>, tops: &mut Vec<usize>| {
        let total: u32 = counts.iter().sum();
        if total > 0 {
            let (top, most) = counts
                .iter()
                .enumerate()
                .max_by_key(|&(_, &count)| count)
                .expect("cells");
            shares.push(f64::from(*most) / f64::from(total));
            tops.push(top);
        }
        counts.iter_mut().for_each(|count| *count = 0);
    };
    for (line, record) in &input.records {
        if line / batch != epoch {
            close(&mut counts, &mut shares, &mut tops);
            epoch = line / batch;
        }
        if let Item::Point(point) = record.item() {
            let cell = grid
                .cell_of(point.x, point.y, OutOfBounds::Clamp)
                .expect("a finite point");
            let index = grid.index(cell);
            counts[index] += 1;
            used.insert(index);
        }
    }
    close(&mut counts, &mut shares, &mut tops);
    let mut sorted = shares.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| {
        sorted
            .get(((sorted.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    WorkloadShape {
        epochs: shares.len(),
        top_cell_share: [at(0.5), at(0.9), at(1.0)],
        cells_used: used.len() as f64 / grid.cell_count() as f64,
        top_cell_changes: tops.windows(2).filter(|pair| pair[0] != pair[1]).count(),
        top_cells: tops.iter().collect::<HashSet<_>>().len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use equipoise::swarm::{Point, Record, Rect};

    #[test]
    fn the_shape_of_a_stream_counted_by_hand() {
        let grid = Grid::new(Rect::new(0.0, 0.0, 4.0, 1.0).unwrap(), 4, 1).unwrap();
        let point = |id, x| Record::<(), ()>::point(&grid, OutOfBounds::Reject, Point::new(id, x, 0.5)).unwrap();
        // Epochs of 4 lines: cells 0,0,0,1 then 2,2,2,3 then 3.
        let xs = [0.5, 0.5, 0.5, 1.5, 2.5, 2.5, 2.5, 3.5, 3.5];
        let input = SpatialInput {
            records: xs
                .iter()
                .enumerate()
                .map(|(i, &x)| (i as u64, point(i as u64, x)))
                .collect(),
            lines: xs.len() as u64,
            skipped_lines: 0,
        };
        let shape = shape(&input, &grid, 4);
        assert_eq!(shape.epochs, 3);
        assert_eq!(shape.top_cell_share, [0.75, 1.0, 1.0]);
        assert_eq!(shape.cells_used, 1.0);
        // The busiest: cell 0, then 2, then 3.
        assert_eq!((shape.top_cell_changes, shape.top_cells), (2, 3));
    }
}
