//! The workload of real places: points drawn from the world's places of
//! 15 000 people or more (GeoNames' cities15000, `lab/data/places.csv`),
//! each in proportion to its population times its daylight, with the sun
//! sweeping west over the run, and jittered a little around the place;
//! queries centred on places in proportion to population alone
//! (subscriptions stay through the night). Longitude and latitude map onto
//! the space's width and height. A few cells (the great cities' regions in
//! daylight) carry a large share of each epoch, and which ones moves.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

use super::input::SpatialInput;
use super::workload::{cumulative, mixed, Kind, SlowWeights};
use equipoise::swarm::Grid;

/// The places: `longitude,latitude,population` lines, `#` comments.
const PLACES: &str = include_str!("../data/places.csv");

/// One place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    /// Degrees east.
    pub longitude: f64,
    /// Degrees north.
    pub latitude: f64,
    /// People.
    pub population: f64,
}

/// The places of `lab/data/places.csv`, the most populous first.
pub fn places() -> Vec<Place> {
    PLACES
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let mut fields = line.split(',').map(|field| {
                field
                    .trim()
                    .parse::<f64>()
                    .unwrap_or_else(|_| panic!("lab/data/places.csv: `{line}`"))
            });
            let mut next = || fields.next().unwrap_or_else(|| panic!("lab/data/places.csv: `{line}`"));
            Place {
                longitude: next(),
                latitude: next(),
                population: next(),
            }
        })
        .collect()
}

/// Settings of the places workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Places {
    /// Number of points.
    pub points: u64,
    /// Number of queries registered (about half are removed later).
    pub queries: u64,
    /// Times the sun goes round the world over the stream, westward.
    pub sweeps: f64,
    /// How sharply activity peaks at noon: a place's daylight is
    /// `night + (1 − night)·max(0, cos(longitude − the sun's))^peak`.
    pub peak: f64,
    /// A place's activity at night, as a share of its noon.
    pub night: f64,
    /// The points' spread around their place, in degrees (a normal law's
    /// deviation).
    pub jitter: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for Places {
    fn default() -> Self {
        Places {
            points: 200_000,
            queries: 2_000,
            sweeps: 1.0,
            peak: 1.0,
            night: 0.03,
            jitter: 0.3,
            seed: 1,
        }
    }
}

impl Places {
    /// The workload's records over the space of `grid`, one per line index.
    /// The sun starts over longitude 180 and moves west `sweeps` times
    /// round over the stream.
    pub fn generate(&self, grid: &Grid) -> SpatialInput {
        let space = grid.bounds();
        let (width, height) = (space.x2 - space.x1, space.y2 - space.y1);
        let places = places();
        let rng = SmallRng::seed_from_u64(self.seed ^ 0x9a1e_5eed);
        let by_population = cumulative(places.iter().map(|place| place.population));
        let daylight = |longitude: f64, sun: f64| {
            let noon = (longitude - sun).to_radians().cos().max(0.0);
            // The default peak of 1 needs no power: 34 M of them cost a run
            // of a million points a fifth of its time.
            let peaked = if self.peak == 1.0 { noon } else { noon.powf(self.peak) };
            self.night + (1.0 - self.night) * peaked
        };
        let mut by_daylight = SlowWeights::default();
        let jitter = Normal::new(0.0, self.jitter.max(0.0)).expect("a valid deviation");
        let near = |rng: &mut SmallRng, progress: f64, kind: Kind| {
            let weights = match kind {
                Kind::Point => by_daylight.at(progress, |step| {
                    let sun = 180.0 - 360.0 * self.sweeps * step / 1000.0;
                    places
                        .iter()
                        .map(move |place| place.population * daylight(place.longitude, sun))
                }),
                Kind::Query => &by_population,
            };
            let pick = rng.random::<f64>() * weights.last().copied().unwrap_or(0.0);
            let place = places[weights.partition_point(|&w| w < pick).min(places.len() - 1)];
            let longitude = (place.longitude + jitter.sample(rng)).clamp(-180.0, 180.0);
            let latitude = (place.latitude + jitter.sample(rng)).clamp(-90.0, 90.0);
            (
                space.x1 + (longitude + 180.0) / 360.0 * width,
                space.y1 + (latitude + 90.0) / 180.0 * height,
            )
        };
        mixed(grid, rng, self.points, self.queries, near)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use equipoise::swarm::{Item, Rect};

    #[test]
    fn the_places_are_the_gazetteers_with_shanghai_first() {
        let places = places();
        assert_eq!(places.len(), 34_006);
        assert_eq!(
            places[0],
            Place {
                longitude: 121.46,
                latitude: 31.22,
                population: 24_874_500.0
            }
        );
        assert!(places.windows(2).all(|pair| pair[0].population >= pair[1].population));
        assert!(places
            .iter()
            .all(|p| p.longitude.abs() <= 180.0 && p.latitude.abs() <= 90.0));
    }

    #[test]
    fn points_follow_the_sun_west() {
        let space = Rect::new(-180.0, -90.0, 180.0, 90.0).unwrap();
        let grid = Grid::new(space, 64, 32).unwrap();
        let settings = Places {
            points: 20_000,
            queries: 200,
            ..Places::default()
        };
        let input = settings.generate(&grid);
        assert_eq!(input.counts(), (20_000, 200, 100));
        assert_eq!(input, settings.generate(&grid));
        // The sun over 180 at the start, over 0 half-way: the points sit
        // nearer it than the other side of the world.
        let (mut early, mut middle) = (Vec::new(), Vec::new());
        for (line, record) in &input.records {
            if let Item::Point(p) = record.item() {
                if *line < 1_000 {
                    early.push(p.x.abs());
                } else if (10_000..11_000).contains(line) {
                    middle.push(p.x.abs());
                }
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(
            mean(&early) > 105.0 && mean(&middle) < 75.0,
            "{} {}",
            mean(&early),
            mean(&middle)
        );
    }

    #[test]
    fn at_its_defaults_a_few_cells_carry_a_large_moving_share() {
        // As the stream of real places measured it in a 64 × 32
        // grid: the busiest cell a median 6 % and up to 11 % of an epoch's
        // points, about 30 % of the cells ever used, the busiest cell moving.
        let grid = Grid::new(Rect::new(0.0, 0.0, 1000.0, 1000.0).unwrap(), 64, 32).unwrap();
        let input = Places::default().generate(&grid);
        let shape = crate::swarm::shape::shape(&input, &grid, 1000);
        let [median, _, most] = shape.top_cell_share;
        assert!((0.05..=0.07).contains(&median), "{shape:?}");
        assert!((0.10..=0.14).contains(&most), "{shape:?}");
        assert!((0.22..=0.35).contains(&shape.cells_used), "{shape:?}");
        assert!(shape.top_cell_changes >= 20 && shape.top_cells >= 8, "{shape:?}");
    }
}
