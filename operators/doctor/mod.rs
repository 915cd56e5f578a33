//! Where is a dataflow skewed? A report, for any timely or differential
//! dataflow, of each operator's records, time and arranged records on
//! every worker (over the run and per window of time), its busiest worker
//! and what that worker's excess over the mean costs, whether its skew is
//! made at its own exchange or inherited (from the channels' records
//! between workers), and the keys that make it ([`SampleKeys`], and the
//! heads of PKG's D-/W-Choices pacts), from
//! timely's and differential's own logs; as a table, JSON, or a page
//! ([`Report::html`]).
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
//! Registering makes timely log every message and schedule, and listens
//! to differential's arrangements, the skew-proof operators' log
//! ([`skew::LOG_NAME`](crate::skew::LOG_NAME)) for their hot keys,
//! PKG's pacts' ([`pkg::LOG_NAME`](crate::pkg::LOG_NAME)) for their heads
//! and the key samplers' ([`LOG_NAME`]). A logger the program registered
//! under one of those names before keeps receiving its events, passed on
//! by the doctor. A program that never registers pays nothing. The guide:
//! `docs/doctor.md`.

mod edges;
mod figures;
mod heads;
mod hot_keys;
mod key_shares;
mod keys;
mod layout;
mod page;
mod report;
mod series;
mod spread;
mod timeline;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use timely::container::CapacityContainerBuilder;
use timely::logging_core::Registry;
use timely::worker::Worker;

pub use edges::{ChannelReport, Origin};
pub use heads::{HeadKeyReport, HeadReport};
pub use key_shares::{KeyShare, KeysReport};
#[cfg(feature = "differential")]
pub use keys::SampleCollectionKeys;
pub use keys::{KeysEvent, KeysEventBuilder, SampleKeys, SampledKey, LOG_NAME};
pub use report::{OperatorReport, Report};
pub use spread::Spread;
pub use timeline::{OperatorWindow, Window};

use crate::common::gather::gather_at_first_worker;
use figures::{Figures, WorkerFigures};
use heads::{Heads, SenderHead};
use hot_keys::{HotKeys, SentHotKey, MAX_HOT_KEYS};

/// The name of the doctor's own dataflows, which it leaves out.
const DOCTOR: &str = "EquipoiseDoctor";

/// Key samplers' latest events on this worker, by the sampler's address.
type Samples = BTreeMap<Vec<usize>, KeysEvent>;

/// Most key samplers kept.
const MAX_SAMPLES: usize = 1024;

/// What the doctor gathers, and over which windows of time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Whether to size each arrangement, from differential's log. That log
    /// also carries every change of every arrangement's batcher: at two
    /// workers it cost a differential count 7 % of its CPU, where records,
    /// time, keys and windows cost nothing measurable. Default: no.
    pub arrangements: bool,
    /// The length of the report's windows of time (`Report::windows`).
    /// Default: one second.
    pub period: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            arrangements: false,
            period: Duration::from_secs(1),
        }
    }
}

impl Settings {
    /// These settings, with the records each arrangement holds.
    pub fn with_arrangements(self) -> Self {
        Settings {
            arrangements: true,
            ..self
        }
    }

    /// These settings, without the arrangements' sizes.
    pub fn without_arrangements(self) -> Self {
        Settings {
            arrangements: false,
            ..self
        }
    }

    /// These settings, with windows of `period`.
    pub fn with_period(self, period: Duration) -> Self {
        Settings { period, ..self }
    }
}

/// One worker's handle on the figures its logs gather.
pub struct Doctor {
    figures: Rc<RefCell<Figures>>,
    hot_keys: Rc<RefCell<HotKeys>>,
    samples: Rc<RefCell<Samples>>,
    heads: Rc<RefCell<Heads>>,
}

/// Starts gathering this worker's figures, with the default [`Settings`]:
/// call on every worker before building the dataflows to report on.
pub fn register(worker: &mut Worker) -> Doctor {
    register_with(worker, Settings::default())
}

/// [`register`], without the records each arrangement holds (see
/// [`Settings::arrangements`]), as `register` now is.
#[deprecated(note = "the arrangements are left out by default: use `register`")]
pub fn register_without_arrangements(worker: &mut Worker) -> Doctor {
    register_with(worker, Settings::default().without_arrangements())
}

/// [`register`], with `settings`.
pub fn register_with(worker: &mut Worker, settings: Settings) -> Doctor {
    let doctor = Doctor {
        figures: Rc::new(RefCell::new(Figures::hiding(DOCTOR, settings.period))),
        hot_keys: Rc::new(RefCell::new(HotKeys::new(MAX_HOT_KEYS))),
        samples: Rc::new(RefCell::new(Samples::new())),
        heads: Rc::new(RefCell::new(Heads::default())),
    };
    if let Some(mut register) = worker.log_register() {
        let timely = Rc::clone(&doctor.figures);
        chain::<timely::logging::TimelyEvent>(&mut register, "timely", move |events| {
            let mut figures = timely.borrow_mut();
            for (time, event) in events {
                figures.timely(*time, event);
            }
        });
        let samples = Rc::clone(&doctor.samples);
        chain::<KeysEvent>(&mut register, LOG_NAME, move |events| {
            let mut samples = samples.borrow_mut();
            for (_, event) in events {
                if samples.len() < MAX_SAMPLES || samples.contains_key(&event.address) {
                    samples.insert(event.address.clone(), event.clone());
                }
            }
        });
        let heads = Rc::clone(&doctor.heads);
        chain::<crate::pkg::events::PkgEvent>(&mut register, crate::pkg::LOG_NAME, move |events| {
            let mut heads = heads.borrow_mut();
            for (_, event) in events {
                heads.event(event);
            }
        });
        #[cfg(feature = "differential")]
        listen_to_differential(
            &mut register,
            settings.arrangements.then_some(&doctor.figures),
            &doctor.hot_keys,
        );
    }
    doctor
}

/// Registers `action` on the batches of events logged under `name`,
/// passing them on to the logger the program registered there before, if
/// any: it receives them as the doctor does, stamped with the time they
/// reach it (at the end of the worker's step at the latest).
fn chain<E: Clone + 'static>(register: &mut Registry, name: &str, mut action: impl FnMut(&[(Duration, E)]) + 'static) {
    let before = register.get::<CapacityContainerBuilder<Vec<(Duration, E)>>>(name);
    register.insert::<CapacityContainerBuilder<Vec<(Duration, E)>>, _>(name, move |_, batch| match batch {
        Some(events) => {
            action(events);
            if let Some(before) = &before {
                before.log_many(events.iter().map(|(_, event)| event.clone()));
            }
        }
        None => {
            if let Some(before) = &before {
                before.flush();
            }
        }
    });
}

/// Arrangements' records (into `figures`, if given), and the skew-proof
/// operators' hot keys.
#[cfg(feature = "differential")]
fn listen_to_differential(
    register: &mut Registry,
    figures: Option<&Rc<RefCell<Figures>>>,
    hot_keys: &Rc<RefCell<HotKeys>>,
) {
    use crate::skew::{self, SkewEvent};
    use differential_dataflow::logging::DifferentialEvent;
    if let Some(arranged) = figures.map(Rc::clone) {
        chain::<DifferentialEvent>(register, "differential/arrange", move |events| {
            let mut figures = arranged.borrow_mut();
            for (_, event) in events {
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
    let hot = Rc::clone(hot_keys);
    chain::<SkewEvent>(register, skew::LOG_NAME, move |events| {
        let mut hot = hot.borrow_mut();
        for (_, event) in events {
            let found: Vec<(u64, usize, Option<&String>)> = match event {
                SkewEvent::Hot { key, name, workers, .. } => {
                    let name = Some(name).filter(|name| !name.is_empty());
                    workers.iter().map(|&worker| (*key, worker, name)).collect()
                }
                SkewEvent::Combined { worker, keys } => keys.iter().map(|&key| (key, *worker, None)).collect(),
                _ => Vec::new(),
            };
            for (key, worker, name) in found {
                hot.found(key, worker, name.map(String::as_str));
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
        // A sampler whose dataflow is forgotten is too.
        let figures = self.figures.borrow();
        self.samples.borrow_mut().retain(|address, _| figures.knows(address));
        drop(figures);
        let heads = self.heads.borrow_mut().of_known(&self.figures.borrow());
        let mine: Gathered = (
            self.figures.borrow().worker_figures(),
            self.hot_keys.borrow().sent(),
            self.samples.borrow().values().cloned().collect(),
            heads,
        );
        let gathered = gather_at_first_worker(worker, DOCTOR, mine);
        if worker.index() != 0 {
            return None;
        }
        let (mut figures, mut hot, mut samples, mut heads) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (worker_figures, worker_hot, sampled, worker_heads) in gathered {
            figures.push(worker_figures);
            hot.extend(worker_hot);
            samples.extend(sampled);
            heads.extend(worker_heads);
        }
        let (hot_keys, names) = hot_keys::merge(hot);
        let mut report = Report::new(figures, hot_keys, samples);
        report.hot_key_names = names;
        report.heads = heads::merge(heads, |address| report.name_of(address));
        Some(report)
    }
}

/// What a worker sends for the report: its figures, the hot keys it saw,
/// its key samplers' latest events and its pacts' heads.
type Gathered = (WorkerFigures, Vec<SentHotKey>, Vec<KeysEvent>, Vec<SenderHead>);
