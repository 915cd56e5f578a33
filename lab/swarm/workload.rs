//! The built-in synthetic workload: points and queries concentrated around
//! hotspots that move across the space over time.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Zipf};

use super::input::SpatialInput;
use equipoise::swarm::Keywords;
use equipoise::swarm::{Grid, OutOfBounds, Rect};
use equipoise::swarm::{Item, Record};
use equipoise::swarm::{Point, Query};

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
        let space = grid.bounds();
        let mut rng = SmallRng::seed_from_u64(self.seed);
        let (width, height) = (space.x2 - space.x1, space.y2 - space.y1);
        let paths: Vec<((f64, f64), (f64, f64))> = (0..self.hotspots.max(1))
            .map(|_| (anywhere(&space, &mut rng), anywhere(&space, &mut rng)))
            .collect();
        let spread = Normal::new(0.0, 0.04).expect("valid deviation");
        let near = |rng: &mut SmallRng, progress: f64, _: Kind| {
            if rng.random_bool(self.concentration) {
                let ((x0, y0), (x1, y1)) = paths[rng.random_range(0..paths.len())];
                let (cx, cy) = (x0 + progress * (x1 - x0), y0 + progress * (y1 - y0));
                let x = (cx + spread.sample(rng) * width).clamp(space.x1, space.x2);
                let y = (cy + spread.sample(rng) * height).clamp(space.y1, space.y2);
                (x, y)
            } else {
                anywhere(&space, rng)
            }
        };
        mixed(grid, rng, self.points, self.queries, near)
    }
}

/// Settings of the clustered workload: points and queries around many
/// centres of heavy-tailed weights (Zipf's law over the centres, as the
/// sizes of places go), with a day band sweeping the space from west to
/// east so that the points' weight moves among the centres over time:
/// many hot spots of different sizes, each hot for part of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clustered {
    /// Number of points.
    pub points: u64,
    /// Number of queries registered (about half are removed later).
    pub queries: u64,
    /// Number of centres.
    pub centres: usize,
    /// Zipf exponent of the centres' weights: centre i (from 0) weighs 1/(i+1)^s.
    pub exponent: f64,
    /// Share of points and queries drawn uniformly over the space.
    pub background: f64,
    /// Times the day band crosses the space over the stream.
    pub sweeps: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for Clustered {
    fn default() -> Self {
        Clustered {
            points: 200_000,
            queries: 2_000,
            centres: 300,
            exponent: 1.0,
            background: 0.05,
            sweeps: 1.0,
            seed: 1,
        }
    }
}

impl Clustered {
    /// The workload's records over the space of `grid`, one per line index.
    /// Centres lie uniformly over the space, each spread by a normal law of
    /// 3 % of the space times the root of its weight (the heaviest weighs 1),
    /// at least 0.3 %, jittered by 0.7–1.4×; a point picks a centre by its
    /// weight times its daylight, 0.05 + 0.95·((1 + cos 2π(x − phase)) / 2)²
    /// over the centre's relative x, the phase moving `sweeps` times across
    /// the space; a query picks a centre by weight alone (subscriptions stay
    /// through the night).
    pub fn generate(&self, grid: &Grid) -> SpatialInput {
        let space = grid.bounds();
        let mut rng = SmallRng::seed_from_u64(self.seed ^ 0xc1a5_7e4d);
        let (width, height) = (space.x2 - space.x1, space.y2 - space.y1);
        let centres: Vec<(f64, f64, f64, f64)> = (0..self.centres.max(1))
            .map(|i| {
                let (x, y) = anywhere(&space, &mut rng);
                let weight = 1.0 / ((i + 1) as f64).powf(self.exponent);
                // Larger places cover more ground: the heaviest 3 % of the
                // space, shrinking with the root of the weight, down to 0.3 %.
                let spread = (0.03 * weight.sqrt()).max(0.003) * rng.random_range(0.7..1.4);
                (x, y, spread, weight)
            })
            .collect();
        let by_weight = cumulative(centres.iter().map(|c| c.3));
        let daylight = |x: f64, phase: f64| {
            let angle = 2.0 * std::f64::consts::PI * ((x - space.x1) / width - phase);
            0.05 + 0.95 * ((1.0 + angle.cos()) / 2.0).powi(2)
        };
        let mut by_daylight = SlowWeights::default();
        let standard = Normal::new(0.0, 1.0).expect("valid deviation");
        let near = |rng: &mut SmallRng, progress: f64, kind: Kind| {
            if rng.random_bool(self.background.clamp(0.0, 1.0)) {
                return anywhere(&space, rng);
            }
            let weights = match kind {
                Kind::Point => by_daylight.at(progress, |step| {
                    let phase = step / 1000.0 * self.sweeps;
                    centres.iter().map(move |c| c.3 * daylight(c.0, phase))
                }),
                Kind::Query => &by_weight,
            };
            let pick = rng.random::<f64>() * weights.last().copied().unwrap_or(0.0);
            let (x, y, spread, _) = centres[weights.partition_point(|&w| w < pick).min(centres.len() - 1)];
            let x = (x + standard.sample(rng) * spread * width).clamp(space.x1, space.x2);
            let y = (y + standard.sample(rng) * spread * height).clamp(space.y1, space.y2);
            (x, y)
        };
        mixed(grid, rng, self.points, self.queries, near)
    }
}

/// Weights that change slowly over a stream: their running sums,
/// recomputed every 1/1000 of it.
#[derive(Debug, Default)]
pub(crate) struct SlowWeights {
    // The thousandth they were computed for, and their running sums.
    step: Option<f64>,
    sums: Vec<f64>,
}

impl SlowWeights {
    /// The running sums at `progress` (0 to 1) through the stream, from
    /// `weights(step)` for its thousandth `step` (0 to 1000) when it is new.
    pub(crate) fn at<I: Iterator<Item = f64>>(&mut self, progress: f64, weights: impl FnOnce(f64) -> I) -> &[f64] {
        let step = (progress * 1000.0).floor();
        if self.step != Some(step) {
            self.sums = cumulative(weights(step));
            self.step = Some(step);
        }
        &self.sums
    }
}

/// Running sums of `weights`.
pub(crate) fn cumulative(weights: impl Iterator<Item = f64>) -> Vec<f64> {
    weights
        .scan(0.0, |sum, w| {
            *sum += w;
            Some(*sum)
        })
        .collect()
}

/// A uniform position in `space`.
fn anywhere(space: &Rect, rng: &mut SmallRng) -> (f64, f64) {
    (
        space.x1 + rng.random::<f64>() * (space.x2 - space.x1),
        space.y1 + rng.random::<f64>() * (space.y2 - space.y1),
    )
}

/// What a position is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Point,
    Query,
}

/// `points` points and `queries` queries (half of them removed later, at
/// random among the active), in an order drawn in proportion to what is
/// left of each kind; `near(rng, progress, kind)` places a point or a
/// query's centre at `progress` (0 to 1) through the stream. Queries are
/// 1–8 % of the space wide and high.
pub(crate) fn mixed(
    grid: &Grid,
    mut rng: SmallRng,
    points_wanted: u64,
    queries_wanted: u64,
    mut near: impl FnMut(&mut SmallRng, f64, Kind) -> (f64, f64),
) -> SpatialInput {
    let space = grid.bounds();
    let (width, height) = (space.x2 - space.x1, space.y2 - space.y1);
    let removals = queries_wanted / 2;
    let total = points_wanted + queries_wanted + removals;
    let (mut points, mut queries) = (0u64, 0u64);
    let mut active: Vec<u64> = Vec::new();
    let mut records = Vec::with_capacity(total as usize);
    for index in 0..total {
        let progress = index as f64 / total.max(1) as f64;
        // Draw the kind in proportion to what is left of each.
        let left_points = points_wanted - points;
        let left_queries = queries_wanted - queries;
        let left_removals = removals - (index - points - queries);
        let removable = !active.is_empty() && left_removals > 0;
        let pick = rng.random_range(0..left_points + left_queries + if removable { left_removals } else { 0 });
        let record = if pick < left_points {
            let (x, y) = near(&mut rng, progress, Kind::Point);
            points += 1;
            Record::point(grid, OutOfBounds::Reject, Point::new(points - 1, x, y))
        } else if pick < left_points + left_queries {
            let (x, y) = near(&mut rng, progress, Kind::Query);
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

impl Hotspots {
    /// The same workload for spatio-textual queries (see [`with_keywords`]).
    pub fn generate_textual(&self, grid: &Grid, vocabulary: u64) -> SpatialInput<Keywords, Keywords> {
        with_keywords(self.generate(grid), vocabulary, self.seed)
    }
}

/// `plain` for spatio-textual queries: each point carries 1 to 3 keywords
/// and each query 1 or 2, drawn from a vocabulary of `vocabulary` words by
/// Zipf's law (exponent 1), as word frequencies go.
pub fn with_keywords(plain: SpatialInput, vocabulary: u64, seed: u64) -> SpatialInput<Keywords, Keywords> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x7e47);
    let zipf = Zipf::new(vocabulary.max(1) as f64, 1.0).expect("a valid Zipf law");
    let words = |rng: &mut SmallRng, most: u64| {
        let count = rng.random_range(1..=most);
        Keywords::ids((0..count).map(|_| zipf.sample(rng) as u64))
    };
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

    #[test]
    fn clustered_points_follow_the_day_band() {
        let space = Rect::new(0.0, 0.0, 1000.0, 1000.0).unwrap();
        let grid = Grid::new(space, 10, 10).unwrap();
        let settings = Clustered {
            points: 20_000,
            queries: 400,
            ..Clustered::default()
        };
        let input = settings.generate(&grid);
        assert_eq!(input.counts(), (20_000, 400, 200));
        assert_eq!(input, settings.generate(&grid));
        // Early points sit where the band starts (x near 0 or 1000, the
        // phase wrapping), points half-way through near x = 500.
        let (mut early, mut middle) = (Vec::new(), Vec::new());
        for (line, record) in &input.records {
            if let Item::Point(p) = record.item() {
                assert!(space.contains(p.x, p.y));
                let band = |x: f64| (x - 500.0).abs() < 250.0;
                if *line < 2_000 {
                    early.push(band(p.x));
                } else if (9_500..11_500).contains(line) {
                    middle.push(band(p.x));
                }
            }
        }
        let share = |v: &[bool]| v.iter().filter(|&&b| b).count() as f64 / v.len() as f64;
        assert!(
            share(&early) < 0.3 && share(&middle) > 0.7,
            "{} {}",
            share(&early),
            share(&middle)
        );
    }
}
