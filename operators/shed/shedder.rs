//! The open-loop shedding operator: drops the share of records the program
//! sets, as its [`Drops`] choose them, and counts what arrived and what it
//! dropped.

use std::cell::RefCell;
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;
use timely::progress::Timestamp;

use crate::common::Error;

use super::drops::Drops;

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
    /// Sets the fraction of records to drop from now on, clamped to
    /// [0, 1]; a fraction that is not a number is refused (the fraction
    /// stays as it was).
    pub fn set_fraction(&self, fraction: f64) -> Result<(), Error> {
        if fraction.is_nan() {
            return Err(Error::invalid("drop fraction", "not a number"));
        }
        self.0.borrow_mut().fraction = fraction.clamp(0.0, 1.0);
        Ok(())
    }

    /// (arrived, dropped) so far.
    pub fn counts(&self) -> (u64, u64) {
        let state = self.0.borrow();
        (state.arrived, state.dropped)
    }
}

/// Load shedding on a stream.
pub trait Shed<'scope, T: Timestamp, D> {
    /// Drops the fraction of records `shedder` is set to, as `drops`
    /// chooses them.
    ///
    /// ```
    /// use timely::dataflow::operators::{Inspect, ToStream};
    /// use equipoise::shed::{Drops, Shed, Shedder};
    ///
    /// timely::example(|scope| {
    ///     let shedder = Shedder::default();
    ///     shedder.set_fraction(0.5).unwrap();
    ///     (0..10u64).to_stream(scope)
    ///         .shed(&shedder, Drops::lowest_utility(|x: &u64| *x as f64))
    ///         .inspect(|x| assert!(*x >= 5));
    /// });
    /// ```
    fn shed(self, shedder: &Shedder, drops: Drops<D>) -> StreamVec<'scope, T, D>;
}

impl<'scope, T: Timestamp, D: Clone + 'static> Shed<'scope, T, D> for StreamVec<'scope, T, D> {
    fn shed(self, shedder: &Shedder, drops: Drops<D>) -> StreamVec<'scope, T, D> {
        let state = Rc::clone(&shedder.0);
        let mut chooser = drops.chooser(self.scope().index());
        self.unary::<CapacityContainerBuilder<Vec<D>>, _, _, _>(Pipeline, "Shed", move |_, _| {
            move |input, output| {
                input.for_each_stamp(|cap, batches| {
                    let mut session = output.session(&cap);
                    let mut state = state.borrow_mut();
                    let fraction = state.fraction;
                    for batch in batches {
                        state.arrived += batch.len() as u64;
                        state.dropped += chooser.drop_share(batch, fraction) as u64;
                        session.give_container(batch);
                    }
                });
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fraction_that_is_not_a_number_is_refused_and_others_clamped() {
        let shedder = Shedder::default();
        shedder.set_fraction(0.3).unwrap();
        let error = shedder.set_fraction(f64::NAN).unwrap_err();
        assert!(error.to_string().contains("drop fraction"), "{error}");
        assert_eq!(shedder.0.borrow().fraction, 0.3);
        shedder.set_fraction(f64::INFINITY).unwrap();
        assert_eq!(shedder.0.borrow().fraction, 1.0);
    }
}
