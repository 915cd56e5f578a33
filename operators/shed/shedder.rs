//! The shedding operator: drops the share of records its controller asks
//! for, at random (seeded) or lowest utility first, and counts what arrived
//! and what it dropped.

use std::cell::RefCell;
use std::rc::Rc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;
use timely::progress::Timestamp;

/// How records are chosen for dropping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ShedMode {
    /// Each record independently, with the drop fraction as probability.
    Random,
    /// The lowest-utility share of each batch.
    Semantic,
}

/// The shedder's shared state: the drop fraction the controller sets, and
/// the counts the program reads.
#[derive(Debug, Default)]
pub(crate) struct ShedState {
    /// Fraction of records to drop, in [0, 1].
    pub fraction: f64,
    /// Records that reached the shedder.
    pub arrived: u64,
    /// Records it dropped.
    pub dropped: u64,
}

/// A handle on a shedder, kept by the program that drives the controller.
#[derive(Debug, Clone, Default)]
pub struct Shedder(Rc<RefCell<ShedState>>);

impl Shedder {
    /// Sets the fraction of records to drop from now on.
    pub fn set_fraction(&self, fraction: f64) {
        self.0.borrow_mut().fraction = fraction.clamp(0.0, 1.0);
    }

    /// (arrived, dropped) so far.
    pub fn counts(&self) -> (u64, u64) {
        let state = self.0.borrow();
        (state.arrived, state.dropped)
    }
}

/// Load shedding on a stream.
pub trait Shed<'scope, T: Timestamp, D> {
    /// Drops the fraction of records `shedder` is set to, by `mode`; for
    /// [`ShedMode::Semantic`], `utility` ranks records (lowest dropped first);
    /// random choices are seeded with `seed`.
    ///
    /// ```
    /// use timely::dataflow::operators::{Inspect, ToStream};
    /// use equipoise::shed::{Shed, ShedMode, Shedder};
    ///
    /// timely::example(|scope| {
    ///     let shedder = Shedder::default();
    ///     shedder.set_fraction(0.5);
    ///     (0..10u64).to_stream(scope)
    ///         .shed(&shedder, ShedMode::Semantic, |x| *x as f64, 1)
    ///         .inspect(|x| assert!(*x >= 5));
    /// });
    /// ```
    fn shed(
        self,
        shedder: &Shedder,
        mode: ShedMode,
        utility: impl Fn(&D) -> f64 + 'static,
        seed: u64,
    ) -> StreamVec<'scope, T, D>;
}

impl<'scope, T: Timestamp, D: Clone + 'static> Shed<'scope, T, D> for StreamVec<'scope, T, D> {
    fn shed(
        self,
        shedder: &Shedder,
        mode: ShedMode,
        utility: impl Fn(&D) -> f64 + 'static,
        seed: u64,
    ) -> StreamVec<'scope, T, D> {
        let state = Rc::clone(&shedder.0);
        let worker = self.scope().index() as u64;
        self.unary::<CapacityContainerBuilder<Vec<D>>, _, _, _>(Pipeline, "Shed", move |_, _| {
            let mut rng = SmallRng::seed_from_u64(seed ^ worker.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut ranked: Vec<(f64, usize)> = Vec::new();
            move |input, output| {
                input.for_each_stamp(|cap, batches| {
                    let mut session = output.session(&cap);
                    let mut state = state.borrow_mut();
                    let fraction = state.fraction;
                    for batch in batches {
                        state.arrived += batch.len() as u64;
                        state.dropped += drop_share(batch, fraction, mode, &utility, &mut rng, &mut ranked) as u64;
                        session.give_container(batch);
                    }
                });
            }
        })
    }
}

/// Drops the `fraction` share of `batch` by `mode` (lowest `utility` first,
/// or each record with that probability from `rng`); returns how many.
/// `ranked` is scratch space kept between calls.
pub(crate) fn drop_share<D>(
    batch: &mut Vec<D>,
    fraction: f64,
    mode: ShedMode,
    utility: &impl Fn(&D) -> f64,
    rng: &mut SmallRng,
    ranked: &mut Vec<(f64, usize)>,
) -> usize {
    let before = batch.len();
    match mode {
        ShedMode::Random => batch.retain(|_| !rng.random_bool(fraction)),
        ShedMode::Semantic => {
            let drop = (fraction * before as f64).round() as usize;
            if drop > 0 {
                ranked.clear();
                ranked.extend(batch.iter().enumerate().map(|(i, d)| (utility(d), i)));
                ranked.select_nth_unstable_by(drop - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
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
