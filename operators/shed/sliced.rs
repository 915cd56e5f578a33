//! Working through a backlog in slices of time: the operator a shedding
//! loop needs downstream of it.
//!
//! A plain operator (`map`, `unary`) handles everything queued at its input
//! each time it runs, so one `worker.step()` can last as long as the whole
//! backlog: the worker neither feeds new arrivals nor runs the controller
//! meanwhile, and the controller sees the delay only in large, late jumps.
//! [`TimeSliced::time_sliced`] handles records for at most a slice of time
//! per activation and asks to run again; records that wait hold their
//! batch's capability, so the backlog shows in the output frontier, which is
//! what the shedding loop measures.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

/// Handling records for at most a slice of time per activation.
pub trait TimeSliced<'scope, T: Timestamp + TotalOrder, D> {
    /// Applies `logic` to each record in arrival order, spending at most
    /// `slice` per activation (checked after each record, so at least one
    /// record is handled and one record's work can overrun the slice), and
    /// emits what it returns at the record's time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use timely::dataflow::operators::{Inspect, ToStream};
    /// use equipoise::shed::TimeSliced;
    ///
    /// timely::example(|scope| {
    ///     (0..1000u64)
    ///         .to_stream(scope)
    ///         .time_sliced("Square", Duration::from_millis(1), |_time, x| Some(x * x))
    ///         .inspect(|x| assert_eq!((*x as f64).sqrt().fract(), 0.0));
    /// });
    /// ```
    fn time_sliced<R, I, L>(self, name: &str, slice: Duration, logic: L) -> StreamVec<'scope, T, R>
    where
        R: Clone + 'static,
        I: IntoIterator<Item = R>,
        L: FnMut(&T, D) -> I + 'static;
}

impl<'scope, T: Timestamp + TotalOrder, D: Clone + 'static> TimeSliced<'scope, T, D> for StreamVec<'scope, T, D> {
    fn time_sliced<R, I, L>(self, name: &str, slice: Duration, mut logic: L) -> StreamVec<'scope, T, R>
    where
        R: Clone + 'static,
        I: IntoIterator<Item = R>,
        L: FnMut(&T, D) -> I + 'static,
    {
        let scope = self.scope();
        self.unary::<CapacityContainerBuilder<Vec<R>>, _, _, _>(Pipeline, name, move |_, info| {
            let activator = scope.activator_for(info.address);
            let mut queue: VecDeque<(Capability<T>, std::vec::IntoIter<D>)> = VecDeque::new();
            move |input, output| {
                input.for_each_stamp(|cap, batches| {
                    if let Some(held) = cap.retain_least(0) {
                        for batch in batches {
                            queue.push_back((held.clone(), std::mem::take(batch).into_iter()));
                        }
                    }
                });
                let began = Instant::now();
                // At least one record per activation, so that a zero slice
                // still makes progress.
                while let Some((cap, records)) = queue.front_mut() {
                    match records.next() {
                        Some(record) => {
                            let mut results = logic(cap.time(), record).into_iter().peekable();
                            if results.peek().is_some() {
                                output.session(&*cap).give_iterator(results);
                            }
                            if began.elapsed() >= slice {
                                break;
                            }
                        }
                        None => {
                            queue.pop_front();
                        }
                    }
                }
                if !queue.is_empty() {
                    activator.activate();
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use timely::dataflow::operators::capture::Extract;
    use timely::dataflow::operators::vec::Input;
    use timely::dataflow::operators::{Capture, Exchange, Probe};

    #[test]
    fn every_record_is_handled_in_order_at_its_time_whatever_the_slice() {
        for slice in [Duration::ZERO, Duration::from_micros(50), Duration::from_secs(1)] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&seen);
            let captured = timely::example(move |scope| {
                let (mut input, stream) = scope.new_input::<u64>();
                let out = stream.time_sliced("Test", slice, move |time, x| {
                    sink.lock().unwrap().push(x);
                    Some((*time, x + 1))
                });
                for epoch in 0..5u64 {
                    for x in 0..200 {
                        input.send(epoch * 1000 + x);
                    }
                    input.advance_to(epoch + 1);
                }
                out.capture()
            });
            let mut results: Vec<(u64, u64)> = captured.extract().into_iter().flat_map(|(_, v)| v).collect();
            results.sort();
            let expected: Vec<(u64, u64)> = (0..5u64)
                .flat_map(|epoch| (0..200).map(move |x| (epoch, epoch * 1000 + x + 1)))
                .collect();
            assert_eq!(results, expected, "slice {slice:?}");
            // In arrival order on the one worker.
            let seen = seen.lock().unwrap();
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "slice {slice:?}");
        }
    }

    #[test]
    fn a_backlog_holds_the_output_frontier_while_the_worker_steps() {
        timely::execute(timely::Config::process(2), |worker| {
            let mut input = timely::dataflow::InputHandle::new();
            let probe = worker.dataflow::<u64, _, _>(|scope| {
                scope
                    .input_from(&mut input)
                    .exchange(|x: &u64| *x)
                    .time_sliced("Slow", Duration::from_micros(200), |_, x: u64| {
                        let began = Instant::now();
                        while began.elapsed() < Duration::from_micros(20) {}
                        Some(x)
                    })
                    .probe()
                    .0
            });
            input.send_batch(&mut (0..2000u64).collect());
            input.advance_to(1);
            // About 2000 × 20 µs / 2 workers = 20 ms of work: the first
            // steps return long before it is done, with epoch 0 unfinished.
            let mut steps = 0;
            while probe.less_than(&1) {
                worker.step();
                steps += 1;
            }
            assert!(steps > 10, "{steps} steps");
        })
        .unwrap();
    }
}
