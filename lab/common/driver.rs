//! Running a job on a timely cluster: feeding epochs while measuring their
//! completion latency, and gathering every worker's figures into one report.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use equipoise::doctor;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;
use timely::ExchangeData;

use super::cluster::ClusterArgs;
use super::gather::gather_at_first_worker;
use crate::common::Error;

/// Runs `job` on every worker of the cluster `cluster` describes, gathers
/// what each returns at worker 0 and returns `assemble`'s report of them in
/// the process that hosts worker 0 (`None` in the others).
pub fn run_gathered<F, R>(
    cluster: &ClusterArgs,
    job: impl Fn(&mut Worker) -> F + Send + Sync + 'static,
    assemble: impl Fn(Vec<F>) -> R + Send + Sync + 'static,
) -> Result<Option<R>, Error>
where
    F: ExchangeData + Clone,
    R: Send + 'static,
{
    Ok(run_diagnosed(cluster, None, job, assemble)?.map(|(report, _)| report))
}

/// [`run_gathered`], with the skew report of the job's dataflows
/// (`equipoise::doctor`, registered with the settings `diagnose` before `job` builds them
/// and asked for once it returns), if given.
pub fn run_diagnosed<F, R>(
    cluster: &ClusterArgs,
    diagnose: Option<doctor::Settings>,
    job: impl Fn(&mut Worker) -> F + Send + Sync + 'static,
    assemble: impl Fn(Vec<F>) -> R + Send + Sync + 'static,
) -> Result<Option<(R, Option<doctor::Report>)>, Error>
where
    F: ExchangeData + Clone,
    R: Send + 'static,
{
    let result = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&result);
    let guards = cluster.execute(move |worker| {
        let doctor = diagnose.map(|settings| doctor::register_with(worker, settings));
        let figures = job(worker);
        let diagnosed = doctor.and_then(|doctor| doctor.report(worker));
        let gathered = gather_at_first_worker(worker, figures);
        if worker.index() == 0 {
            *slot.lock().expect("report slot") = Some((assemble(gathered), diagnosed));
        }
    })?;
    for outcome in guards.join() {
        outcome.map_err(Error::Runtime)?;
    }
    let report = result.lock().expect("report slot").take();
    Ok(report)
}

/// How the epochs of one worker went.
#[derive(Debug, Clone, Default)]
pub struct EpochTimes {
    /// Completion latency of each epoch, from its first record to the probe
    /// passing it, in microseconds.
    pub latencies_us: Vec<u64>,
    /// Seconds from the first record until the probe was done.
    pub elapsed_s: f64,
}

/// The epochs a worker has fed whose output is not yet complete, oldest
/// first, with when each began; retiring them records their latencies.
#[derive(Debug, Default)]
pub struct OpenEpochs {
    open: VecDeque<(u64, Instant)>,
    /// Completion latency of each retired epoch, in microseconds.
    pub latencies_us: Vec<u64>,
}

impl OpenEpochs {
    /// Room for the latencies of `epochs` epochs.
    pub fn with_capacity(epochs: u64) -> Self {
        OpenEpochs {
            open: VecDeque::new(),
            latencies_us: Vec::with_capacity(epochs as usize),
        }
    }

    /// `epoch` begins now.
    pub fn begin(&mut self, epoch: u64) {
        self.open.push_back((epoch, Instant::now()));
    }

    /// Retires, oldest first, the epochs `probe` has passed.
    pub fn retire(&mut self, probe: &ProbeHandle<u64>) {
        while let Some(&(epoch, began)) = self.open.front() {
            if probe.less_equal(&epoch) {
                break;
            }
            self.latencies_us.push(began.elapsed().as_micros() as u64);
            self.open.pop_front();
        }
    }

    /// Epochs open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

/// Feeds epochs `0..epochs` into `input` (`feed` sends this worker's records
/// of an epoch), keeping at most `max_in_flight` epochs open, then closes the
/// input and runs until `probe` is done. A worker waiting parks rather than
/// spins, so that on a machine with fewer cores than workers the idle ones
/// leave the CPU to the busy. With `progress`, worker 0 prints a line to
/// stderr about once a second, labelled with it.
pub fn drive_epochs<D: Clone + 'static>(
    worker: &mut Worker,
    mut input: InputHandle<u64, CapacityContainerBuilder<Vec<D>>>,
    probe: &ProbeHandle<u64>,
    epochs: u64,
    max_in_flight: u64,
    progress: Option<&str>,
    mut feed: impl FnMut(u64, &mut InputHandle<u64, CapacityContainerBuilder<Vec<D>>>),
) -> EpochTimes {
    let mut open = OpenEpochs::with_capacity(epochs);
    let start = Instant::now();
    let mut last_progress = start;
    for epoch in 0..epochs {
        open.begin(epoch);
        feed(epoch, &mut input);
        input.advance_to(epoch + 1);
        while open.len() as u64 >= max_in_flight.max(1) {
            worker.step_or_park(None);
            open.retire(probe);
        }
        open.retire(probe);
        if let Some(label) = progress.filter(|_| worker.index() == 0) {
            if last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                let rate = (epoch + 1) as f64 / start.elapsed().as_secs_f64();
                eprintln!(
                    "[{label}] epoch {} of {epochs}, {rate:.0} epochs/s, {} open",
                    epoch + 1,
                    open.len()
                );
            }
        }
    }
    drop(input);
    while !probe.done() {
        worker.step_or_park(None);
        open.retire(probe);
    }
    open.retire(probe);
    EpochTimes {
        latencies_us: open.latencies_us,
        elapsed_s: start.elapsed().as_secs_f64(),
    }
}
