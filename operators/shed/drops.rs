//! How a shedder chooses the records it drops: at random, or the lowest
//! utility first.

use std::rc::Rc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// What ranks records for dropping: the lowest first.
type Utility<D> = Rc<dyn Fn(&D) -> f64>;

/// How a shedder ([`Shed::shed`](super::Shed::shed),
/// [`ShedLoop::shed_loop_with`](super::ShedLoop::shed_loop_with)) chooses
/// the records it drops. The default is [`Drops::random`].
///
/// ```
/// use equipoise::shed::Drops;
///
/// // Records are (sensor, reading) pairs; drop the least urgent readings first.
/// let drops = Drops::lowest_utility(|&(_, reading): &(u32, f64)| reading);
/// // Or each record independently, seeded for a repeatable run.
/// let random: Drops<(u32, f64)> = Drops::random().with_seed(7);
/// # let _ = (drops, random);
/// ```
pub struct Drops<D> {
    utility: Option<Utility<D>>,
    seed: u64,
}

impl<D> Clone for Drops<D> {
    fn clone(&self) -> Self {
        Drops {
            utility: self.utility.clone(),
            seed: self.seed,
        }
    }
}

impl<D> Default for Drops<D> {
    fn default() -> Self {
        Drops::random()
    }
}

impl<D> Drops<D> {
    /// Each record independently, with the drop fraction as its
    /// probability; random choices seeded with 0 (mixed with the worker
    /// index, so that workers choose differently).
    pub fn random() -> Self {
        Drops { utility: None, seed: 0 }
    }

    /// The lowest-`utility` share of each batch (ties: the earlier record
    /// first); a utility that is not a number ranks lowest.
    pub fn lowest_utility(utility: impl Fn(&D) -> f64 + 'static) -> Self {
        Drops {
            utility: Some(Rc::new(utility)),
            seed: 0,
        }
    }

    /// The same, with random choices seeded with `seed`.
    pub fn with_seed(self, seed: u64) -> Self {
        Drops { seed, ..self }
    }

    /// The chooser of worker `worker`.
    pub(crate) fn chooser(self, worker: usize) -> Chooser<D> {
        let mixed = self.seed ^ (worker as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Chooser {
            drops: self,
            rng: SmallRng::seed_from_u64(mixed),
            ranked: Vec::new(),
        }
    }
}

/// One worker's [`Drops`] with its random state and scratch space.
pub(crate) struct Chooser<D> {
    drops: Drops<D>,
    rng: SmallRng,
    ranked: Vec<(f64, usize)>,
}

impl<D> Chooser<D> {
    /// Drops the `fraction` share of `batch` (a fraction that is not a
    /// number drops nothing; one outside [0, 1] is clamped); returns how many.
    pub(crate) fn drop_share(&mut self, batch: &mut Vec<D>, fraction: f64) -> usize {
        let fraction = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
        let before = batch.len();
        match &self.drops.utility {
            None => {
                let rng = &mut self.rng;
                batch.retain(|_| !rng.random_bool(fraction));
            }
            Some(utility) => {
                let drop = (fraction * before as f64).round() as usize;
                if drop > 0 {
                    let ranked = &mut self.ranked;
                    ranked.clear();
                    ranked.extend(batch.iter().enumerate().map(|(i, d)| (utility(d), i)));
                    // NaN utilities sort first (lowest) under a total order on −NaN.
                    ranked.select_nth_unstable_by(drop - 1, |a, b| rank(a.0).total_cmp(&rank(b.0)).then(a.1.cmp(&b.1)));
                    let mut keep = vec![true; before];
                    for &(_, index) in &ranked[..drop] {
                        keep[index] = false;
                    }
                    let mut index = 0;
                    batch.retain(|_| {
                        index += 1;
                        keep[index - 1]
                    });
                }
            }
        }
        before - batch.len()
    }
}

/// A utility as it ranks: not a number ranks below every number.
fn rank(utility: f64) -> f64 {
    if utility.is_nan() {
        f64::NEG_INFINITY
    } else {
        utility
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_utility_drops_the_lowest_share_and_not_a_number_first() {
        let mut chooser = Drops::lowest_utility(|x: &f64| *x).chooser(0);
        let mut batch = vec![5.0, f64::NAN, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(chooser.drop_share(&mut batch, 0.5), 3);
        assert_eq!(batch, [5.0, 4.0, 3.0]);
    }

    #[test]
    fn a_fraction_that_is_not_a_number_drops_nothing_and_others_are_clamped() {
        for drops in [Drops::random(), Drops::lowest_utility(|x: &u32| f64::from(*x))] {
            let mut chooser = drops.chooser(1);
            let mut batch: Vec<u32> = (0..100).collect();
            assert_eq!(chooser.drop_share(&mut batch, f64::NAN), 0);
            assert_eq!(chooser.drop_share(&mut batch, -3.0), 0);
            assert_eq!(chooser.drop_share(&mut batch, f64::INFINITY), 100);
        }
    }

    #[test]
    fn random_drops_are_repeatable_by_seed_and_differ_by_worker() {
        let kept = |seed, worker| {
            let mut batch: Vec<u32> = (0..1000).collect();
            Drops::random()
                .with_seed(seed)
                .chooser(worker)
                .drop_share(&mut batch, 0.5);
            batch
        };
        assert_eq!(kept(3, 0), kept(3, 0));
        assert_ne!(kept(3, 0), kept(3, 1));
        let dropped = 1000 - kept(3, 0).len();
        assert!((400..=600).contains(&dropped), "{dropped}");
    }
}
