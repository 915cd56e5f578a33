//! How uneven one figure is over the workers: the busiest worker, its
//! figure over the mean, and its excess over the mean.

use serde::{Deserialize, Serialize};

/// How uneven one figure is over the workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The worker with the most.
    pub busiest: usize,
    /// The busiest worker's over the mean (1 where the mean is 0).
    pub busiest_over_mean: f64,
    /// The busiest worker's excess over the mean, in the figure's unit:
    /// what the unevenness costs, as the other workers wait for it.
    pub excess: f64,
}

impl Spread {
    /// The spread of `values`, one per worker.
    pub fn of(values: &[f64]) -> Spread {
        let (busiest, most) =
            values.iter().copied().enumerate().fold(
                (0, f64::MIN),
                |best, (worker, value)| if value > best.1 { (worker, value) } else { best },
            );
        let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
        if values.is_empty() || mean <= 0.0 {
            return Spread {
                busiest,
                busiest_over_mean: 1.0,
                excess: 0.0,
            };
        }
        Spread {
            busiest,
            busiest_over_mean: most / mean,
            excess: most - mean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_worker_and_its_excess() {
        let spread = Spread::of(&[1.0, 5.0, 2.0, 0.0]);
        assert_eq!(spread.busiest, 1);
        assert!((spread.busiest_over_mean - 2.5).abs() < 1e-9);
        assert!((spread.excess - 3.0).abs() < 1e-9);
        assert_eq!(Spread::of(&[0.0, 0.0]).busiest_over_mean, 1.0);
    }
}
