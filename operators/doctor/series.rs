//! One worker's figures per window of time: records per channel and busy
//! time per operator, so that a report shows how the skew changes, not
//! only its sum. The recent windows are kept whole; older ones are merged
//! in pairs as they age, so what is kept stays bounded however long a
//! program runs.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// Windows kept at the period itself.
pub(crate) const RECENT: usize = 64;

/// Older windows kept, each of the same, doubling, length.
pub(crate) const OLDER: usize = 32;

/// One window's figures on this worker.
#[derive(Debug, Clone, Default)]
pub(crate) struct Window {
    /// Its first period, counted from the registry's start.
    pub(crate) start: u64,
    /// Periods it covers: a power of two, and `start` a multiple of it.
    pub(crate) span: u64,
    /// Records delivered, by channel.
    pub(crate) records: HashMap<usize, u64>,
    /// Nanoseconds scheduled, by operator.
    pub(crate) busy_ns: HashMap<usize, u64>,
}

impl Window {
    fn at(start: u64, span: u64) -> Window {
        Window {
            start,
            span,
            ..Window::default()
        }
    }

    /// Adds `other`'s figures to this window's.
    fn absorb(&mut self, other: Window) {
        for (channel, records) in other.records {
            *self.records.entry(channel).or_default() += records;
        }
        for (operator, busy) in other.busy_ns {
            *self.busy_ns.entry(operator).or_default() += busy;
        }
    }
}

/// The windows of one worker, the oldest first.
#[derive(Debug)]
pub(crate) struct Series {
    period: Duration,
    /// Older windows, each of `2^level` periods.
    older: VecDeque<Window>,
    level: u32,
    /// Windows of one period, the newest last.
    recent: VecDeque<Window>,
}

impl Series {
    /// Windows of `period` (at least a microsecond).
    pub(crate) fn new(period: Duration) -> Series {
        Series {
            period: period.max(Duration::from_micros(1)),
            older: VecDeque::new(),
            level: 0,
            recent: VecDeque::new(),
        }
    }

    pub(crate) fn period(&self) -> Duration {
        self.period
    }

    /// Counts `records` delivered on `channel` at `time`.
    pub(crate) fn records(&mut self, time: Duration, channel: usize, records: u64) {
        *self.window(time).records.entry(channel).or_default() += records;
    }

    /// Charges `busy` to `operator`, at `time` (the end of its schedule).
    pub(crate) fn busy(&mut self, time: Duration, operator: usize, busy: Duration) {
        *self.window(time).busy_ns.entry(operator).or_default() += busy.as_nanos() as u64;
    }

    /// The window `time` falls in: the newest (a late event, timely's
    /// logs being in time order per logger but not across them, joins it).
    fn window(&mut self, time: Duration) -> &mut Window {
        let index = (time.as_nanos() / self.period.as_nanos()) as u64;
        if self.recent.back().is_none_or(|newest| newest.start < index) {
            self.recent.push_back(Window::at(index, 1));
            while self.recent.len() > RECENT {
                let aged = self.recent.pop_front().expect("more than kept");
                self.age(aged);
            }
        }
        self.recent.back_mut().expect("a window was pushed")
    }

    /// Moves `aged` among the older windows, merging them in pairs when
    /// there are too many.
    fn age(&mut self, aged: Window) {
        let span = 1u64 << self.level;
        let start = aged.start - aged.start % span;
        match self.older.back_mut() {
            Some(last) if last.start == start => last.absorb(aged),
            _ => {
                let mut window = Window::at(start, span);
                window.absorb(aged);
                self.older.push_back(window);
            }
        }
        // Periods far apart merge nothing at one level more: until few enough.
        while self.older.len() > OLDER {
            self.level += 1;
            let span = 1u64 << self.level;
            let mut merged: VecDeque<Window> = VecDeque::new();
            for window in self.older.drain(..) {
                let start = window.start - window.start % span;
                match merged.back_mut() {
                    Some(last) if last.start == start => last.absorb(window),
                    _ => {
                        let mut coarse = Window::at(start, span);
                        coarse.absorb(window);
                        merged.push_back(coarse);
                    }
                }
            }
            self.older = merged;
        }
    }

    /// Every window kept, the oldest first, with the period after its
    /// last: an older window being filled ends where the recent ones begin.
    pub(crate) fn windows(&self) -> Vec<(&Window, u64)> {
        let all: Vec<&Window> = self.older.iter().chain(self.recent.iter()).collect();
        let ends = all
            .iter()
            .skip(1)
            .map(|next| Some(next.start))
            .chain(std::iter::once(None));
        all.iter()
            .zip(ends)
            .map(|(window, next)| {
                (
                    *window,
                    next.map_or(window.start + window.span, |next| next.min(window.start + window.span)),
                )
            })
            .collect()
    }

    /// Forgets the channels and operators `keep` refuses (a finished
    /// dataflow's).
    pub(crate) fn retain(&mut self, keep_channel: impl Fn(usize) -> bool, keep_operator: impl Fn(usize) -> bool) {
        for window in self.older.iter_mut().chain(self.recent.iter_mut()) {
            window.records.retain(|&channel, _| keep_channel(channel));
            window.busy_ns.retain(|&operator, _| keep_operator(operator));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_windows_are_kept_whole_and_older_ones_merged_with_nothing_lost() {
        let mut series = Series::new(Duration::from_millis(10));
        let periods = 1_000u64;
        for period in 0..periods {
            let time = Duration::from_millis(10 * period + 3);
            series.records(time, 7, period);
            series.busy(time, 1, Duration::from_nanos(1));
        }
        let windows = series.windows();
        assert!(windows.len() <= RECENT + OLDER + 1, "{} windows", windows.len());
        // The newest are one period each, in order.
        let recent: Vec<u64> = windows[windows.len() - RECENT..].iter().map(|(w, _)| w.start).collect();
        assert_eq!(recent, (periods - RECENT as u64..periods).collect::<Vec<_>>());
        // The windows tile the run, each aligned to its span, and sum it.
        let mut next = 0;
        for &(window, end) in &windows {
            assert_eq!(window.start, next);
            assert_eq!(window.start % window.span, 0);
            next = end;
            let expected: u64 = (window.start..end).sum();
            assert_eq!(window.records[&7], expected);
            assert_eq!(window.busy_ns[&1], end - window.start);
        }
        assert_eq!(next, periods);
    }

    #[test]
    fn periods_far_apart_keep_the_older_windows_bounded() {
        let mut series = Series::new(Duration::from_millis(1));
        // Active periods ever further apart: each aged window merges
        // with nothing until the span reaches the gaps.
        for step in 0..400u64 {
            series.records(Duration::from_millis(step * step * 37), 1, 1);
        }
        let windows = series.windows();
        assert!(windows.len() <= RECENT + OLDER, "{} windows", windows.len());
        assert_eq!(windows.iter().map(|(w, _)| w.records[&1]).sum::<u64>(), 400);
    }

    #[test]
    fn a_late_event_joins_the_newest_window_and_idle_periods_make_none() {
        let mut series = Series::new(Duration::from_secs(1));
        series.records(Duration::from_millis(5_500), 1, 2);
        series.records(Duration::from_millis(4_900), 1, 3);
        series.records(Duration::from_millis(9_000), 1, 4);
        let windows: Vec<(u64, u64)> = series.windows().iter().map(|(w, _)| (w.start, w.records[&1])).collect();
        assert_eq!(windows, [(5, 5), (9, 4)]);
    }
}
