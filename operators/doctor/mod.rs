//! Where is a dataflow skewed? A report, for any timely or differential
//! dataflow, of each operator's records, time and arranged records on
//! every worker, its busiest worker and what that worker's excess over the
//! mean costs, from timely's and differential's own logs.
//!
//! Register on every worker before building the dataflows to report on,
//! and ask every worker for the report at the same point of the program
//! (at the end, or every period): the workers' figures are gathered to
//! worker 0, across processes too.
//!
//! ```
//! use differential_dataflow::input::Input;
//! use equipoise::doctor;
//!
//! timely::execute(timely::Config::process(2), |worker| {
//!     let doctor = doctor::register(worker);
//!     let mut input = worker.dataflow::<u64, _, _>(|scope| {
//!         let (input, keys) = scope.new_collection::<u64, isize>();
//!         keys.count();
//!         input
//!     });
//!     // Key 0 takes half the keys.
//!     for i in 0..10_000u64 {
//!         input.insert(if i % 2 == 0 { 0 } else { i });
//!     }
//!     input.close();
//!     while worker.step() {}
//!     if let Some(report) = doctor.report(worker) {
//!         // The count's arrangement receives three quarters of the keys
//!         // on key 0's worker.
//!         let count = report.operator("Arrange: Count").expect("the count's arrangement");
//!         assert!(count.busiest_over_mean > 1.3);
//!         assert!(count.hint.as_deref().unwrap().contains("skew_count"));
//!         println!("{report}");
//!     }
//! })
//! .unwrap();
//! ```
//!
//! Registering replaces any logger the program registered under `timely`
//! and `differential/arrange`, and makes timely log every message and
//! schedule; it listens to the skew-proof operators' log
//! ([`SKEW_LOG_NAME`](crate::skew::SKEW_LOG_NAME)) for their hot keys
//! unless the program already does. A program that never registers pays
//! nothing.

mod figures;
mod report;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use timely::logging::TimelyEventBuilder;
use timely::worker::Worker;

pub use report::{OperatorReport, Report, Spread};

use crate::common::gather::gather_at_first_worker;
use figures::{Figures, OperatorFigures};

/// The name of the doctor's own dataflows, which it leaves out.
const DOCTOR: &str = "EquipoiseDoctor";

/// Hot keys by hash, with the workers each was split over or combined on.
type HotKeys = BTreeMap<u64, BTreeSet<usize>>;

/// One worker's handle on the figures its logs gather.
pub struct Doctor {
    figures: Rc<RefCell<Figures>>,
    hot_keys: Rc<RefCell<HotKeys>>,
}

/// Starts gathering this worker's figures: call on every worker before
/// building the dataflows to report on.
pub fn register(worker: &mut Worker) -> Doctor {
    register_gathering(worker, true)
}

/// [`register`], without the records each arrangement holds: their source,
/// differential's log, also logs every change of every arrangement's
/// batcher, which on one worker can cost a differential join 8 % of its
/// updates/s (records and time cost nothing measurable).
pub fn register_without_arrangements(worker: &mut Worker) -> Doctor {
    register_gathering(worker, false)
}

/// Registers the loggers: timely's, and with `arrangements` differential's.
fn register_gathering(worker: &mut Worker, arrangements: bool) -> Doctor {
    let figures = Rc::new(RefCell::new(Figures::hiding(DOCTOR)));
    let hot_keys = Rc::new(RefCell::new(HotKeys::new()));
    if let Some(mut register) = worker.log_register() {
        let timely = Rc::clone(&figures);
        register.insert::<TimelyEventBuilder, _>("timely", move |_, events| {
            let mut figures = timely.borrow_mut();
            for (time, event) in events.iter().flatten() {
                figures.timely(*time, event);
            }
        });
        #[cfg(feature = "differential")]
        listen_to_differential(&mut register, arrangements.then_some(&figures), &hot_keys);
        #[cfg(not(feature = "differential"))]
        let _ = arrangements;
    }
    Doctor { figures, hot_keys }
}

/// Arrangements' records (into `figures`, if given), and the skew-proof
/// operators' hot keys.
#[cfg(feature = "differential")]
fn listen_to_differential(
    register: &mut timely::logging_core::Registry,
    figures: Option<&Rc<RefCell<Figures>>>,
    hot_keys: &Rc<RefCell<HotKeys>>,
) {
    use crate::skew::{SkewEvent, SkewEventBuilder, SKEW_LOG_NAME};
    use differential_dataflow::logging::{DifferentialEvent, DifferentialEventBuilder};
    /// Most hot keys kept: the skew-proof operators split at most 4 096.
    const MAX_HOT_KEYS: usize = 4096;
    if let Some(arranged) = figures.map(Rc::clone) {
        register.insert::<DifferentialEventBuilder, _>("differential/arrange", move |_, events| {
            let mut figures = arranged.borrow_mut();
            for (_, event) in events.iter().flatten() {
                // Batches in, merges (the merged in for the inputs), drops out.
                match event {
                    DifferentialEvent::Batch(batch) => figures.arranged(batch.operator, batch.length as i64),
                    DifferentialEvent::Merge(merge) => {
                        if let Some(complete) = merge.complete {
                            let merged = complete as i64 - (merge.length1 + merge.length2) as i64;
                            figures.arranged(merge.operator, merged);
                        }
                    }
                    DifferentialEvent::Drop(drop) => figures.arranged(drop.operator, -(drop.length as i64)),
                    _ => {}
                }
            }
        });
    }
    if register.get::<SkewEventBuilder>(SKEW_LOG_NAME).is_some() {
        // The program listens itself: the report goes without hot keys.
        return;
    }
    let hot = Rc::clone(hot_keys);
    register.insert::<SkewEventBuilder, _>(SKEW_LOG_NAME, move |_, events| {
        let mut hot = hot.borrow_mut();
        for (_, event) in events.iter().flatten() {
            let found: Vec<(u64, usize)> = match event {
                SkewEvent::Hot { key, workers, .. } => workers.iter().map(|&worker| (*key, worker)).collect(),
                SkewEvent::Combined { worker, keys } => keys.iter().map(|&key| (key, *worker)).collect(),
                _ => Vec::new(),
            };
            for (key, worker) in found {
                if hot.len() < MAX_HOT_KEYS || hot.contains_key(&key) {
                    hot.entry(key).or_default().insert(worker);
                }
            }
        }
    });
}

impl Doctor {
    /// The report of every worker's figures so far, on worker 0 (`None`
    /// on the others). Every worker must call it at the same point of the
    /// program: it runs a small dataflow of its own that gathers the
    /// figures (left out of the report).
    pub fn report(&self, worker: &mut Worker) -> Option<Report> {
        if let Some(mut register) = worker.log_register() {
            register.flush();
        }
        // Earlier reports' dataflows are built: what they log is dropped.
        self.figures.borrow_mut().forget_hidden();
        let mine: Gathered = (
            self.figures.borrow().operators(),
            self.hot_keys
                .borrow()
                .iter()
                .map(|(&key, workers)| (key, workers.iter().copied().collect::<Vec<_>>()))
                .collect::<Vec<_>>(),
        );
        let mut gathered = gather_at_first_worker(worker, DOCTOR, mine);
        if worker.index() != 0 {
            return None;
        }
        let mut hot_keys = HotKeys::new();
        for (key, workers) in gathered.iter_mut().flat_map(|(_, hot)| hot.drain(..)) {
            hot_keys.entry(key).or_default().extend(workers);
        }
        let hot_keys = hot_keys
            .into_iter()
            .map(|(key, workers)| (key, workers.into_iter().collect()))
            .collect();
        Some(Report::new(
            gathered.into_iter().map(|(figures, _)| figures).collect(),
            hot_keys,
        ))
    }
}

/// What a worker sends for the report: its operators' figures and the hot
/// keys it saw.
type Gathered = (Vec<OperatorFigures>, Vec<(u64, Vec<usize>)>);
