//! The report's windows of time: every worker's windows aligned into one
//! timeline, and each operator's records and busy time per worker in each,
//! so that the skew reads as a series.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::figures::WorkerFigures;
use super::spread::Spread;

/// One window of the report's timeline, in seconds since the workers'
/// logging began.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// When it begins.
    pub start_s: f64,
    /// When it ends.
    pub end_s: f64,
}

/// One operator's figures in one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorWindow {
    /// Records delivered to its inputs on each worker.
    pub records: Vec<u64>,
    /// Seconds it was scheduled on each worker.
    pub busy_s: Vec<f64>,
    /// The busiest worker's records over the mean (1 where it received
    /// none in this window; its time's, for an operator that never
    /// receives records).
    pub busiest_over_mean: f64,
}

/// Each operator's windows, by address.
pub(crate) type Series = HashMap<Vec<usize>, Vec<OperatorWindow>>;

/// The timeline of `workers`' windows and each operator's figures in it.
/// A window of the timeline is the union of the workers' windows that
/// overlap: the workers' clocks differ a little, and an older window of
/// one may span several recent ones of another.
pub(crate) fn align(workers: &[WorkerFigures]) -> (Vec<Window>, Series) {
    let period_s = workers.iter().map(|w| w.period_s).fold(0.0, f64::max);
    let mut spans: Vec<(u64, u64)> = workers
        .iter()
        .flat_map(|w| w.windows.iter().map(|window| (window.start, window.end)))
        .collect();
    spans.sort_unstable();
    let mut cells: Vec<(u64, u64)> = Vec::new();
    for (start, end) in spans {
        match cells.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => cells.push((start, end)),
        }
    }
    let peers = workers.len();
    let mut series = Series::new();
    let empty = || {
        let window = OperatorWindow {
            records: vec![0; peers],
            busy_s: vec![0.0; peers],
            busiest_over_mean: 1.0,
        };
        vec![window; cells.len()]
    };
    for (worker, figures) in workers.iter().enumerate() {
        for window in &figures.windows {
            let cell = cells.partition_point(|&(start, _)| start <= window.start) - 1;
            for (address, records) in &window.records {
                series.entry(address.clone()).or_insert_with(empty)[cell].records[worker] += records;
            }
            for (address, busy) in &window.busy_ns {
                series.entry(address.clone()).or_insert_with(empty)[cell].busy_s[worker] += *busy as f64 / 1e9;
            }
        }
    }
    for windows in series.values_mut() {
        // An operator that receives records reads them in every window
        // (a window with none is even); one that never does, its time.
        let receives = windows.iter().any(|w| w.records.iter().any(|&r| r > 0));
        for window in windows {
            window.busiest_over_mean = if receives {
                Spread::of(&window.records.iter().map(|&r| r as f64).collect::<Vec<_>>()).busiest_over_mean
            } else {
                Spread::of(&window.busy_s).busiest_over_mean
            };
        }
    }
    let timeline = cells
        .iter()
        .map(|&(start, end)| Window {
            start_s: start as f64 * period_s,
            end_s: end as f64 * period_s,
        })
        .collect();
    (timeline, series)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::figures::WindowFigures;

    fn worker(windows: &[(u64, u64, u64)]) -> WorkerFigures {
        WorkerFigures {
            operators: Vec::new(),
            scopes: Vec::new(),
            channels: Vec::new(),
            period_s: 0.5,
            windows: windows
                .iter()
                .map(|&(start, end, records)| WindowFigures {
                    start,
                    end,
                    records: vec![(vec![0, 1], records)],
                    busy_ns: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn overlapping_windows_merge_and_each_workers_records_land_in_theirs() {
        // Worker 0's older window [0, 4) spans worker 1's [2, 3) and [3, 4).
        let workers = [
            worker(&[(0, 4, 10), (4, 5, 1)]),
            worker(&[(2, 3, 3), (3, 4, 4), (6, 7, 9)]),
        ];
        let (timeline, series) = align(&workers);
        let starts: Vec<(f64, f64)> = timeline.iter().map(|w| (w.start_s, w.end_s)).collect();
        assert_eq!(starts, [(0.0, 2.0), (2.0, 2.5), (3.0, 3.5)]);
        let records: Vec<Vec<u64>> = series[&vec![0, 1]].iter().map(|w| w.records.clone()).collect();
        assert_eq!(records, [vec![10, 7], vec![1, 0], vec![0, 9]]);
        assert!((series[&vec![0, 1]][2].busiest_over_mean - 2.0).abs() < 1e-9);
    }
}
