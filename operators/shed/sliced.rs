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

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::{Operator, OutputBuilderSession};
use timely::dataflow::operators::Capability;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use super::deadline::Deadline;

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

    /// The same, dropping each record whose time began at least the
    /// deadline's target ago before `logic` spends any work on it, and
    /// counting it in its loop's figures ([`LoopFigures::late`]): it cannot
    /// make the target any more, and working on it would make the records
    /// behind it late too. What records are dropped does not depend on
    /// their utility: none of them can be saved.
    ///
    /// ```
    /// use std::time::Duration;
    /// use timely::dataflow::operators::{Input, Probe};
    /// use timely::dataflow::ProbeHandle;
    /// use equipoise::shed::{Auto, LoopSettings, ShedLoop, TimeSliced};
    ///
    /// timely::execute(timely::Config::thread(), |worker| {
    ///     let settings = LoopSettings::new(Duration::from_millis(300));
    ///     let mut input = timely::dataflow::InputHandle::new();
    ///     let output = ProbeHandle::new();
    ///     let handle = worker.dataflow::<u64, _, _>(|scope| {
    ///         let (admitted, handle) = scope.input_from(&mut input).shed_loop(&settings, Auto::default(), &output);
    ///         let deadline = handle.deadline();
    ///         admitted
    ///             .time_sliced_within("Work", Duration::from_millis(2), &deadline, |_time, x: u64| Some(x + 1))
    ///             .probe_with(&output);
    ///         handle
    ///     });
    ///     input.send_batch(&mut (0..1000u64).collect());
    ///     drop(input);
    ///     while !output.done() {
    ///         worker.step();
    ///     }
    ///     let figures = handle.figures();
    ///     // Nothing was late; had anything been, arrived = dropped + processed
    ///     // still, and `late` of the processed were dropped by the work stage.
    ///     assert_eq!((figures.arrived, figures.processed, figures.late), (1000, 1000, 0));
    /// })
    /// .unwrap();
    /// ```
    ///
    /// [`LoopFigures::late`]: super::figures::LoopFigures::late
    fn time_sliced_within<R, I, L>(
        self,
        name: &str,
        slice: Duration,
        deadline: &Deadline<T>,
        logic: L,
    ) -> StreamVec<'scope, T, R>
    where
        R: Clone + 'static,
        I: IntoIterator<Item = R>,
        L: FnMut(&T, D) -> I + 'static;
}

impl<'scope, T: Timestamp + TotalOrder, D: Clone + 'static> TimeSliced<'scope, T, D> for StreamVec<'scope, T, D> {
    fn time_sliced<R, I, L>(self, name: &str, slice: Duration, logic: L) -> StreamVec<'scope, T, R>
    where
        R: Clone + 'static,
        I: IntoIterator<Item = R>,
        L: FnMut(&T, D) -> I + 'static,
    {
        sliced(self, name, slice, None, logic)
    }

    fn time_sliced_within<R, I, L>(
        self,
        name: &str,
        slice: Duration,
        deadline: &Deadline<T>,
        logic: L,
    ) -> StreamVec<'scope, T, R>
    where
        R: Clone + 'static,
        I: IntoIterator<Item = R>,
        L: FnMut(&T, D) -> I + 'static,
    {
        sliced(self, name, slice, Some(deadline.clone()), logic)
    }
}

/// A batch waiting: its capability, its records, and when its time began
/// (under a deadline).
struct Waiting<T: Timestamp, D> {
    cap: Capability<T>,
    records: std::vec::IntoIter<D>,
    began: Option<Instant>,
}

/// The batches waiting, in arrival order.
struct Backlog<T: Timestamp, D> {
    queue: VecDeque<Waiting<T, D>>,
    /// Under a deadline with the first-record clock: when each waiting
    /// time was first seen, and how many batches of it wait.
    seen: BTreeMap<T, (Instant, usize)>,
}

impl<T: Timestamp + TotalOrder, D> Backlog<T, D> {
    /// Queues `batch`, held at `held`, with when its time began under
    /// `deadline` (by the first-record clock, the first batch of its time
    /// seen, `now` if none waits).
    fn push(&mut self, held: &Capability<T>, batch: Vec<D>, now: Instant, deadline: Option<&Deadline<T>>) {
        let began = deadline.map(|deadline| {
            deadline.began(held.time(), || {
                let entry = self.seen.entry(held.time().clone()).or_insert((now, 0));
                entry.1 += 1;
                entry.0
            })
        });
        self.queue.push_back(Waiting {
            cap: held.clone(),
            records: batch.into_iter(),
            began,
        });
    }

    /// Applies `logic` to the waiting records in order, emitting what it
    /// returns, for at most `slice` (at least one record, so that a zero
    /// slice still makes progress), and skips those whose time began the
    /// deadline's target ago; returns how many it skipped.
    fn work<R, I>(
        &mut self,
        slice: Duration,
        deadline: Option<&Deadline<T>>,
        logic: &mut impl FnMut(&T, D) -> I,
        output: &mut OutputBuilderSession<'_, T, CapacityContainerBuilder<Vec<R>>>,
    ) -> u64
    where
        R: Clone + 'static,
        I: IntoIterator<Item = R>,
    {
        let began = Instant::now();
        let mut late = 0;
        while let Some(waiting) = self.queue.front_mut() {
            match waiting.records.next() {
                Some(record) => {
                    if let (Some(deadline), Some(time_began)) = (deadline, waiting.began)
                        && time_began.elapsed() >= deadline.target
                    {
                        late += 1;
                        continue;
                    }
                    let mut results = logic(waiting.cap.time(), record).into_iter().peekable();
                    if results.peek().is_some() {
                        output.session(&waiting.cap).give_iterator(results);
                    }
                    if began.elapsed() >= slice {
                        break;
                    }
                }
                None => self.pop(),
            }
        }
        late
    }

    /// Drops the front batch, done, and forgets when its time was first
    /// seen once no batch of it waits.
    fn pop(&mut self) {
        let done = self.queue.pop_front().expect("the front batch");
        if let Some(count) = self.seen.get_mut(done.cap.time()) {
            count.1 -= 1;
            if count.1 == 0 {
                self.seen.remove(done.cap.time());
            }
        }
    }
}

fn sliced<'scope, T, D, R, I, L>(
    stream: StreamVec<'scope, T, D>,
    name: &str,
    slice: Duration,
    deadline: Option<Deadline<T>>,
    mut logic: L,
) -> StreamVec<'scope, T, R>
where
    T: Timestamp + TotalOrder,
    D: Clone + 'static,
    R: Clone + 'static,
    I: IntoIterator<Item = R>,
    L: FnMut(&T, D) -> I + 'static,
{
    let scope = stream.scope();
    stream.unary::<CapacityContainerBuilder<Vec<R>>, _, _, _>(Pipeline, name, move |_, info| {
        let activator = scope.activator_for(info.address);
        let mut backlog = Backlog {
            queue: VecDeque::new(),
            seen: BTreeMap::new(),
        };
        move |input, output| {
            let now = Instant::now();
            input.for_each_stamp(|cap, batches| {
                if let Some(held) = cap.retain_least(0) {
                    for batch in batches {
                        backlog.push(&held, std::mem::take(batch), now, deadline.as_ref());
                    }
                }
            });
            let late = backlog.work(slice, deadline.as_ref(), &mut logic, output);
            if let Some(deadline) = deadline.as_ref().filter(|_| late > 0) {
                deadline.count(late);
            }
            if !backlog.queue.is_empty() {
                activator.activate();
            }
        }
    })
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
    fn under_a_deadline_the_records_of_times_older_than_the_target_are_dropped_and_counted() {
        use crate::shed::{LoopSettings, NoShedding, ShedLoop};
        use timely::dataflow::ProbeHandle;
        for workers in [1, 2] {
            let worked = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&worked);
            let figures = timely::execute(timely::Config::process(workers), move |worker| {
                // Times below 5 began a second ago, the others now: with a
                // 300 ms target the first half is late, the second not.
                let start = Instant::now();
                let settings = LoopSettings::new(Duration::from_millis(300)).with_clock(move |t: &u64| {
                    if *t < 5 {
                        start - Duration::from_secs(1)
                    } else {
                        start
                    }
                });
                let mut input = timely::dataflow::InputHandle::new();
                let output = ProbeHandle::new();
                let sink = Arc::clone(&sink);
                let handle = worker.dataflow::<u64, _, _>(|scope| {
                    let (admitted, handle) = scope.input_from(&mut input).shed_loop(&settings, NoShedding, &output);
                    let deadline = handle.deadline();
                    admitted
                        .exchange(|x: &u64| *x)
                        .time_sliced_within("Work", Duration::from_millis(1), &deadline, move |_, x: u64| {
                            sink.lock().unwrap().push(x);
                            None::<()>
                        })
                        .probe_with(&output);
                    handle
                });
                let me = worker.index() as u64;
                for time in 0..10u64 {
                    input.advance_to(time);
                    for x in 0..100u64 {
                        input.send((time * 100 + x) * 2 + me);
                    }
                }
                drop(input);
                while !output.done() {
                    worker.step();
                }
                handle.figures()
            })
            .unwrap()
            .join()
            .into_iter()
            .map(|figures| figures.unwrap())
            .collect::<Vec<_>>();
            let sum = |f: fn(&crate::shed::figures::LoopFigures) -> u64| figures.iter().map(f).sum::<u64>();
            let arrived = 1000 * workers as u64;
            assert_eq!(sum(|f| f.arrived), arrived);
            assert_eq!(sum(|f| f.dropped), 0);
            assert_eq!(sum(|f| f.processed), arrived, "the late ones' times completed too");
            assert_eq!(sum(|f| f.late), arrived / 2, "{workers} workers");
            // Exactly the records of the young times were worked on.
            let mut worked = worked.lock().unwrap().clone();
            worked.sort();
            let expected: Vec<u64> = (500 * 2..1000 * 2).filter(|x| *x % 2 < workers as u64).collect();
            assert_eq!(worked, expected);
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
