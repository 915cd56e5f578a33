//! The sending half of an exchange pact: records batched per destination
//! worker and pushed when a batch fills, the stamp changes or the stream
//! ends. The pacts differ only in how they pick each record's destination.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::communication::{Pull, Push};
use timely::dataflow::channels::pact::{LogPuller, LogPusher};
use timely::dataflow::channels::{Message, Stamp};
use timely::logging::TimelyLogger;
use timely::progress::Timestamp;
use timely::worker::Worker;

/// A pusher to one worker, logged as timely's own pacts log theirs.
pub(crate) type LoggedPusher<T, D> = LogPusher<Box<dyn Push<Message<T, Vec<D>>>>>;
/// The receiving end of an exchange, logged.
pub(crate) type LoggedPuller<T, D> = LogPuller<Box<dyn Pull<Message<T, Vec<D>>>>>;
/// A [`Scatter`] over logged pushers.
pub(crate) type LoggedScatter<T, D> = Scatter<T, D, LoggedPusher<T, D>>;

/// Allocates an exchange channel for a pact's `connect`: a [`Scatter`] over
/// logged pushers to every worker, and the logged puller.
pub(crate) fn allocate_scatter<T, D>(
    worker: &Worker,
    identifier: usize,
    address: Rc<[usize]>,
    logging: Option<TimelyLogger>,
) -> (LoggedScatter<T, D>, LoggedPuller<T, D>)
where
    T: Timestamp,
    D: Serialize + for<'a> Deserialize<'a> + Send + 'static,
{
    let (senders, receiver) = worker.allocate::<Message<T, Vec<D>>>(identifier, address);
    let index = worker.index();
    let pushers = senders
        .into_iter()
        .enumerate()
        .map(|(target, pusher)| LogPusher::new(pusher, index, target, identifier, logging.clone()))
        .collect();
    (
        Scatter::new(pushers),
        LogPuller::new(receiver, index, identifier, logging),
    )
}

/// Batches records per destination and pushes them at their stamp.
pub(crate) struct Scatter<T, D, P> {
    pushers: Vec<P>,
    buffers: Vec<Vec<D>>,
    sent: Vec<u64>,
    current: Option<Stamp<T>>,
}

impl<T: Eq + Clone, D, P: Push<Message<T, Vec<D>>>> Scatter<T, D, P> {
    /// Over the pushers of every destination worker.
    pub(crate) fn new(pushers: Vec<P>) -> Self {
        let peers = pushers.len();
        Scatter {
            pushers,
            buffers: (0..peers).map(|_| Vec::new()).collect(),
            sent: vec![0; peers],
            current: None,
        }
    }

    /// Number of destinations.
    pub(crate) fn peers(&self) -> usize {
        self.pushers.len()
    }

    /// Records routed to each destination so far (sent or still buffered).
    pub(crate) fn routed(&self) -> impl Iterator<Item = u64> + '_ {
        self.sent
            .iter()
            .zip(&self.buffers)
            .map(|(sent, buffer)| sent + buffer.len() as u64)
    }

    /// Handles one `push` of the pact: a message is split by `route`, which
    /// gives the destination of each record at the message's stamp; `None`
    /// flushes everything and closes the destinations.
    pub(crate) fn push(
        &mut self,
        message: &mut Option<Message<T, Vec<D>>>,
        mut route: impl FnMut(&Stamp<T>, &D) -> usize,
    ) {
        let Some(bundle) = message else {
            self.flush();
            self.current = None;
            for pusher in self.pushers.iter_mut() {
                pusher.done();
            }
            return;
        };
        if self.pushers.len() == 1 {
            // One worker: nothing to choose, so pass the batch through as
            // timely's Exchange does.
            self.sent[0] += bundle.data.len() as u64;
            self.pushers[0].push(message);
            return;
        }
        if self.current.as_ref() != Some(&bundle.stamp) {
            self.flush();
            self.current = Some(bundle.stamp.clone());
        }
        let stamp = self.current.as_ref().expect("set above");
        let capacity = timely::container::buffer::default_capacity::<D>();
        for datum in bundle.data.drain(..) {
            let destination = route(stamp, &datum);
            let buffer = &mut self.buffers[destination];
            if buffer.capacity() == 0 {
                buffer.reserve(capacity);
            }
            buffer.push(datum);
            if buffer.len() >= capacity {
                send(
                    buffer,
                    &mut self.sent[destination],
                    stamp,
                    &mut self.pushers[destination],
                );
            }
        }
    }

    fn flush(&mut self) {
        if let Some(stamp) = &self.current {
            for destination in 0..self.buffers.len() {
                if !self.buffers[destination].is_empty() {
                    send(
                        &mut self.buffers[destination],
                        &mut self.sent[destination],
                        stamp,
                        &mut self.pushers[destination],
                    );
                }
            }
        }
    }
}

/// Sends `buffer` at `stamp` and counts its records in `sent`. A pusher may
/// hand back a used container for reuse (serializing ones do) with its old
/// records still in it: clear it.
fn send<T: Clone, D, P: Push<Message<T, Vec<D>>>>(
    buffer: &mut Vec<D>,
    sent: &mut u64,
    stamp: &Stamp<T>,
    pusher: &mut P,
) {
    *sent += buffer.len() as u64;
    Message::push_at(buffer, stamp.clone(), pusher);
    buffer.clear();
}
