//! The built-in synthetic workload: points and queries concentrated around
//! hotspots that move across the space over time.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Zipf};

use super::app::{Point, Query};
use super::geometry::{Grid, OutOfBounds, Rect};
use super::input::SpatialInput;
use super::record::{Item, Record};
use super::textual::Keywords;

/// Settings of the moving-hotspot workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hotspots {
    /// Number of points.
    pub points: u64,
    /// Number of queries registered (about half are removed later).
    pub queries: u64,
    /// Number of hotspots.
    pub hotspots: usize,
    /// Share of points and queries drawn near a hotspot (the rest uniform).
    pub concentration: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for Hotspots {
    fn default() -> Self {
        Hotspots {
            points: 200_000,
            queries: 2_000,
            hotspots: 2,
            concentration: 0.9,
            seed: 1,
        }
    }
}

impl Hotspots {
    /// The workload's records over the space of `grid`, one per line index.
    /// Hotspot `h` travels in a straight line between two random points of
    /// the space over the course of the stream, so the load moves.
    pub fn generate(&self, grid: &Grid) -> SpatialInput {
        let space = &grid.bounds();
        let mut rng = SmallRng::seed_from_u64(self.seed);
        let (width, height) = (space.x2 - space.x1, space.y2 - space.y1);
        let anywhere = |rng: &mut SmallRng| {
            (
                space.x1 + rng.random::<f64>() * width,
                space.y1 + rng.random::<f64>() * height,
            )
        };
        let paths: Vec<((f64, f64), (f64, f64))> = (0..self.hotspots.max(1))
            .map(|_| (anywhere(&mut rng), anywhere(&mut rng)))
            .collect();
        let spread = Normal::new(0.0, 0.04).expect("valid deviation");
        let removals = self.queries / 2;
        let total = self.points + self.queries + removals;
        let (mut points, mut queries) = (0u64, 0u64);
        let mut active: Vec<u64> = Vec::new();
        let mut records = Vec::with_capacity(total as usize);
        for index in 0..total {
            let progress = index as f64 / total.max(1) as f64;
            let near = |rng: &mut SmallRng| {
                if rng.random_bool(self.concentration) {
                    let ((x0, y0), (x1, y1)) = paths[rng.random_range(0..paths.len())];
                    let (cx, cy) = (x0 + progress * (x1 - x0), y0 + progress * (y1 - y0));
                    let x = (cx + spread.sample(rng) * width).clamp(space.x1, space.x2);
                    let y = (cy + spread.sample(rng) * height).clamp(space.y1, space.y2);
                    (x, y)
                } else {
                    anywhere(rng)
                }
            };
            // Draw the kind in proportion to what is left of each.
            let left_points = self.points - points;
            let left_queries = self.queries - queries;
            let left_removals = removals - (index - points - queries);
            let removable = !active.is_empty() && left_removals > 0;
            let pick = rng.random_range(0..left_points + left_queries + if removable { left_removals } else { 0 });
            let record = if pick < left_points {
                let (x, y) = near(&mut rng);
                points += 1;
                Record::point(grid, OutOfBounds::Reject, Point::new(points - 1, x, y))
            } else if pick < left_points + left_queries {
                let (x, y) = near(&mut rng);
                let (w, h) = (
                    width * rng.random_range(0.01..0.08),
                    height * rng.random_range(0.01..0.08),
                );
                let rect = Rect {
                    x1: (x - w / 2.0).max(space.x1),
                    y1: (y - h / 2.0).max(space.y1),
                    x2: (x + w / 2.0).min(space.x2),
                    y2: (y + h / 2.0).min(space.y2),
                };
                queries += 1;
                active.push(queries - 1);
                Record::query(grid, OutOfBounds::Reject, Query::new(queries - 1, rect))
            } else {
                Ok(Record::removal(active.swap_remove(rng.random_range(0..active.len()))))
            };
            records.push((index, record.expect("drawn inside the space")));
        }
        SpatialInput {
            lines: records.len() as u64,
            records,
            skipped_lines: 0,
        }
    }
}

impl Hotspots {
    /// The same workload for spatio-textual queries: each point carries 1 to
    /// 3 keywords and each query 1 or 2, drawn from a vocabulary of
    /// `vocabulary` words by Zipf's law (exponent 1), as word frequencies go.
    pub fn generate_textual(&self, grid: &Grid, vocabulary: u64) -> SpatialInput<Keywords, Keywords> {
        let mut rng = SmallRng::seed_from_u64(self.seed ^ 0x7e47);
        let zipf = Zipf::new(vocabulary.max(1) as f64, 1.0).expect("a valid Zipf law");
        let words = |rng: &mut SmallRng, most: u64| {
            let count = rng.random_range(1..=most);
            Keywords::ids((0..count).map(|_| zipf.sample(rng) as u64))
        };
        let plain = self.generate(grid);
        let records = plain
            .records
            .into_iter()
            .map(|(line, record)| {
                let item = match record.into_item() {
                    Item::Point(point) => Item::Point(point.with(words(&mut rng, 3))),
                    Item::Query(query) => Item::Query(query.with(words(&mut rng, 2))),
                    Item::Removal(id) => Item::Removal(id),
                };
                (line, Record::try_from(item).expect("valid already"))
            })
            .collect();
        SpatialInput {
            records,
            lines: plain.lines,
            skipped_lines: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_the_requested_mix_inside_the_space() {
        let space = Rect::new(0.0, 0.0, 100.0, 50.0).unwrap();
        let grid = Grid::new(space, 10, 5).unwrap();
        let input = Hotspots {
            points: 5000,
            queries: 200,
            ..Hotspots::default()
        }
        .generate(&grid);
        assert_eq!(input.counts(), (5000, 200, 100));
        for (_, record) in &input.records {
            match record.item() {
                Item::Point(p) => assert!(space.contains(p.x, p.y)),
                Item::Query(q) => {
                    assert!(space.contains(q.rect.x1, q.rect.y1) && space.contains(q.rect.x2, q.rect.y2));
                }
                Item::Removal(_) => {}
            }
        }
        let again = Hotspots {
            points: 5000,
            queries: 200,
            ..Hotspots::default()
        }
        .generate(&grid);
        assert_eq!(input, again);
    }
}
