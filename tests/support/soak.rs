//! Memory soaks: an operator in a plain dataflow at a high rate for
//! minutes, the process's resident memory sampled as it runs. After the
//! first minute (allocators and caches warm, bounded windows filling) the
//! memory may grow by at most 1 % of the process's size, or 2 MB.
//!
//! `EQUIPOISE_SOAK_MINUTES` sets the length (default 10).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long after the start the baseline is taken.
const WARM_UP: Duration = Duration::from_secs(60);
/// How often the memory is sampled.
const EVERY: Duration = Duration::from_secs(10);
/// The growth allowed after the warm-up: this share of the baseline...
const SHARE: f64 = 0.01;
/// ... or this many bytes, whichever is larger.
const FLOOR: u64 = 2 << 20;

/// The resident memory of this process, bytes (Linux: `VmRSS` in
/// `/proc/self/status`, in kB, whatever the page size).
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("a soak reads /proc/self/status (Linux)");
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|field| field.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("status's VmRSS line");
    kb * 1024
}

/// A running soak, shared by the workers of its process.
pub struct Soak {
    name: &'static str,
    start: Instant,
    length: Duration,
    samples: Mutex<(Instant, Vec<(f64, u64)>)>,
    /// Records the dataflow handled, counted by the test.
    pub records: AtomicU64,
    /// Log events the operators emitted, counted by the test's logger.
    pub events: AtomicU64,
}

impl Soak {
    /// A soak called `name`, starting now.
    pub fn new(name: &'static str) -> Self {
        let minutes: f64 = std::env::var("EQUIPOISE_SOAK_MINUTES")
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(10.0);
        let start = Instant::now();
        Soak {
            name,
            start,
            length: Duration::from_secs_f64(minutes * 60.0),
            samples: Mutex::new((start, vec![(0.0, rss_bytes())])),
            records: AtomicU64::new(0),
            events: AtomicU64::new(0),
        }
    }

    /// Counts the events of the log `name` on `worker` (a listener, as a
    /// user's would be, so the soak pays what logging costs).
    pub fn count_events<E: 'static>(self: &Arc<Self>, worker: &mut timely::worker::Worker, name: &str) {
        let soak = Arc::clone(self);
        worker
            .log_register()
            .expect("a log registry")
            .insert::<timely::container::CapacityContainerBuilder<Vec<(Duration, E)>>, _>(name, move |_time, batch| {
                if let Some(batch) = batch {
                    soak.events.fetch_add(batch.len() as u64, Ordering::Relaxed);
                    batch.clear();
                }
            });
    }

    /// Whether to go on; samples the memory when a sample is due.
    pub fn running(&self) -> bool {
        let now = Instant::now();
        let mut samples = self.samples.lock().unwrap();
        if now >= samples.0 + EVERY {
            samples.0 = now;
            samples.1.push(((now - self.start).as_secs_f64(), rss_bytes()));
        }
        now - self.start < self.length
    }

    /// Prints the samples and the verdict's figures, and checks the growth.
    pub fn check(&self) {
        let mut samples = self.samples.lock().unwrap().1.clone();
        samples.push((self.start.elapsed().as_secs_f64(), rss_bytes()));
        let mb = |bytes: u64| bytes as f64 / (1 << 20) as f64;
        let baseline = samples
            .iter()
            .find(|(at, _)| *at >= WARM_UP.as_secs_f64())
            .map(|&(_, rss)| rss)
            .expect("a soak runs past its warm-up: EQUIPOISE_SOAK_MINUTES above 1");
        let after: Vec<u64> = samples
            .iter()
            .filter(|(at, _)| *at >= WARM_UP.as_secs_f64())
            .map(|&(_, rss)| rss)
            .collect();
        let (last, max) = (*after.last().unwrap(), *after.iter().max().unwrap());
        let growth = max.saturating_sub(baseline);
        let allowed = ((SHARE * baseline as f64) as u64).max(FLOOR);
        let elapsed = samples.last().unwrap().0;
        let records = self.records.load(Ordering::Relaxed);
        println!("soak {}: RSS samples (s, MB):", self.name);
        for (at, rss) in &samples {
            println!("  {at:7.1} {:8.2}", mb(*rss));
        }
        println!(
            "soak {}: {:.1} min, {records} records ({:.0}/s), {} log events; RSS at start {:.2} MB, at 1 min {:.2} MB, after the dataflow ended {:.2} MB, max after 1 min {:.2} MB: growth {:.2} MB ({:.2} %), allowed {:.2} MB",
            self.name,
            elapsed / 60.0,
            records as f64 / elapsed,
            self.events.load(Ordering::Relaxed),
            mb(samples[0].1),
            mb(baseline),
            mb(last),
            mb(max),
            mb(growth),
            100.0 * growth as f64 / baseline as f64,
            mb(allowed)
        );
        assert!(records > 0, "the soak's dataflow handled records");
        assert!(
            growth <= allowed,
            "soak {}: memory grew {:.2} MB after the first minute, more than {:.2} MB",
            self.name,
            mb(growth),
            mb(allowed)
        );
    }
}
