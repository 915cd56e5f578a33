//! One loop across workers: every worker's loop broadcasts what it measured
//! over each of its periods, and decides each period on the combination of
//! every worker's measurements of that period, in period order. Periods
//! are numbered by the clock (period k ends k + 1 periods after the loop
//! started), so a busy worker that wakes late ends every period that has
//! passed with one share, and its periods stay in step with its peers'. The
//! controllers all start alike and see the same samples, so they set the
//! same rate: a shedding loop's workers each drop the same fraction of
//! their arrivals, and a throttle's split the rate over their readers
//! ([`allowance`]), whichever workers read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sample::PeriodSample;

/// One worker's measurements over one of its periods.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Share {
    /// The worker.
    pub worker: usize,
    /// Its period, counted from 0.
    pub period: u64,
    /// How many periods, from `period` on, the share covers: more than one
    /// when the worker woke only after several had ended.
    pub span: u64,
    /// Its rates and delays over the period.
    pub sample: PeriodSample,
    /// Records it let in whose time the output had not completed when the
    /// period ended.
    pub waiting: f64,
    /// Whether it stood still for much of the period (see `ShedLoop`), or
    /// its throttle yielded to a shedder: a guarded controller holds its
    /// decision.
    pub stalled: bool,
    /// Whether its source was refused records it asked for (a throttle's
    /// loop): what it wants is more than it was allowed.
    pub limited: bool,
}

/// What a worker's loop tells the others.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) enum Message {
    /// Its measurements of one or more periods.
    Share(Share),
    /// It has stopped (its input ended and the output completed
    /// everything): from period `from` on, it reads nothing.
    Left { worker: usize, from: u64 },
}

/// What every worker decides on for one period.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Combined {
    /// The period.
    pub period: u64,
    /// The workers' mean rates, and their delays averaged.
    pub sample: PeriodSample,
    /// This worker's own measurements of the period.
    pub own: PeriodSample,
    /// The workers' mean of the records waiting at the period's end.
    pub waiting: f64,
    /// Whether any worker stood still.
    pub stalled: bool,
    /// Every share heard of the period (this worker's too).
    pub shares: Vec<Share>,
}

/// How far ahead of the next period to decide a peer's share is kept.
const AHEAD: u64 = 256;

/// The workers' shares of the periods not yet decided.
pub(crate) struct Periods {
    workers: usize,
    me: usize,
    /// The next period to decide.
    next: u64,
    waiting: BTreeMap<u64, Vec<Option<Share>>>,
    /// From which period on each worker has left.
    left: Vec<Option<u64>>,
    /// How many of its own periods this worker waits for a missing share
    /// before deciding without it: a peer that neither reports nor says it
    /// left is stuck, and the loop must not stop with it.
    patience: u64,
}

impl Periods {
    /// For worker `me` of `workers`.
    pub(crate) fn new(workers: usize, me: usize, patience: u64) -> Self {
        Periods {
            workers,
            me,
            next: 0,
            waiting: BTreeMap::new(),
            left: vec![None; workers],
            patience,
        }
    }

    /// Takes in a worker's message (this worker's shares too). Periods
    /// more than [`AHEAD`] ahead of the next to decide are not kept: on a
    /// stream that never ends, a worker that lags its peers would otherwise
    /// keep their shares without bound; when it gets there it decides
    /// without them, as for a peer that is stuck.
    pub(crate) fn hear(&mut self, message: Message) {
        match message {
            Message::Share(mut share) if share.worker < self.workers => {
                // Each period it covers gets its rates over its own length
                // (what a prediction integrates).
                share.sample.length_ms /= share.span.max(1) as f64;
                let (workers, next) = (self.workers, self.next);
                for period in share.period.max(next)..(share.period + share.span).min(next + AHEAD) {
                    self.waiting.entry(period).or_insert_with(|| vec![None; workers])[share.worker] = Some(share);
                }
            }
            Message::Left { worker, from } if worker < self.workers => self.left[worker] = Some(from),
            _ => {}
        }
    }

    /// The next period to decide, once every worker's share of it has come
    /// (or the worker has left), or once this worker has ended `patience`
    /// more of its own periods.
    pub(crate) fn next_ready(&mut self, ended: u64) -> Option<Combined> {
        let shares = self.waiting.get(&self.next)?;
        let (period, own) = (self.next, shares[self.me]?.sample);
        let complete = shares
            .iter()
            .zip(&self.left)
            .all(|(share, left)| share.is_some() || left.is_some_and(|from| from <= period));
        if !(complete || ended > period + self.patience) {
            return None;
        }
        let shares: Vec<Share> = self.waiting.remove(&period)?.into_iter().flatten().collect();
        self.next = period + 1;
        Some(Combined {
            period,
            sample: combine(&shares, self.workers),
            own,
            waiting: shares.iter().map(|share| share.waiting).sum::<f64>() / self.workers as f64,
            stalled: shares.iter().any(|share| share.stalled),
            shares,
        })
    }
}

/// The workers' mean rates (a missing worker counted as none) and the
/// delay of the shared output as the worker that dates it earliest does:
/// the largest delays any worker measured. Under a stamp clock every worker
/// reads the same delay; under the first-record clock a worker dates a time
/// from when it saw the time's first record, and one that read none of it
/// (it reads nothing, or less) reads the oldest time as young or not at
/// all. The spread is the mean over the workers that measured a delay.
fn combine(shares: &[Share], workers: usize) -> PeriodSample {
    let rate = |f: fn(&PeriodSample) -> f64| shares.iter().map(|s| f(&s.sample)).sum::<f64>() / workers as f64;
    let largest = |f: fn(&PeriodSample) -> f64| shares.iter().map(|s| f(&s.sample)).fold(0.0, f64::max);
    let mean = |f: fn(&PeriodSample) -> f64| shares.iter().map(|s| f(&s.sample)).sum::<f64>() / shares.len() as f64;
    let measuring: Vec<f64> = shares
        .iter()
        .filter(|s| s.sample.max_age_ms > 0.0)
        .map(|s| s.sample.spread_ms)
        .collect();
    PeriodSample {
        delay_ms: largest(|s| s.delay_ms),
        arrival_rate: rate(|s| s.arrival_rate),
        admitted_rate: rate(|s| s.admitted_rate),
        processed_rate: rate(|s| s.processed_rate),
        age_ms: largest(|s| s.age_ms),
        max_age_ms: largest(|s| s.max_age_ms),
        spread_ms: measuring.iter().sum::<f64>() / measuring.len().max(1) as f64,
        length_ms: mean(|s| s.length_ms),
    }
}

/// The admitted rate this worker holds when the controller, on the
/// workers' mean rates `sample`, asks for `admitted` (a mean too): its own
/// arrivals `own` times the fraction admitted overall. A worker that had
/// no arrivals holds the mean, so that records it starts to read are not
/// all dropped until the next period.
pub(crate) fn own_part(admitted: f64, own: &PeriodSample, sample: &PeriodSample) -> f64 {
    if sample.arrival_rate > 0.0 && own.arrival_rate > 0.0 {
        admitted * own.arrival_rate / sample.arrival_rate
    } else {
        admitted
    }
}

/// How much more than it sent last period a source that was not refused
/// is allowed: room for its demand to rise before it is held back.
const HEADROOM: f64 = 0.25;

/// This worker's allowance, records/s, when the controller asks for
/// `admitted` (a mean over `workers`) and the workers' throttles reported
/// `shares`: the total is split max-min fairly (water-filling). A worker
/// whose source was not refused wants what it sent, and a quarter more; one
/// that was refused wants more than any split gives it; a worker that sent
/// no share wants nothing (a reader that starts reading is refused, and
/// gets its share, from the next period on). Each gets what it wants up to a level set so that
/// the allowances add up to the total; if all want less than the total, the
/// rest is split evenly. So the readers' allowances add up to what the
/// dataflow can take, whichever workers read, and a reader slower than the
/// level is not held back to make room for a fast one. An infinite rate
/// allows every worker without limit.
pub(crate) fn allowance(admitted: f64, shares: &[Share], workers: usize, me: usize) -> f64 {
    let total = admitted.max(0.0) * workers as f64;
    if total.is_infinite() {
        return f64::INFINITY;
    }
    let wants = |worker: usize| match shares.iter().find(|share| share.worker == worker) {
        Some(share) if share.limited => f64::INFINITY,
        Some(share) => share.sample.admitted_rate * (1.0 + HEADROOM),
        None => 0.0,
    };
    let mut wanted: Vec<f64> = (0..workers).map(wants).collect();
    let mine = wanted[me];
    let finite: f64 = wanted.iter().filter(|w| w.is_finite()).sum();
    if wanted.iter().all(|w| w.is_finite()) && finite <= total {
        return mine + (total - finite) / workers as f64;
    }
    // The level: the smallest wants are met in full while what is left,
    // split evenly over the rest, is more than they want.
    wanted.sort_by(f64::total_cmp);
    let mut left = total;
    let mut level = 0.0;
    for (k, want) in wanted.iter().enumerate() {
        level = left / (workers - k) as f64;
        if *want > level {
            break;
        }
        left -= want;
    }
    mine.min(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(worker: usize, period: u64, arrival_rate: f64, delay_ms: f64) -> Share {
        Share {
            worker,
            period,
            span: 1,
            sample: PeriodSample {
                delay_ms,
                arrival_rate,
                admitted_rate: arrival_rate / 2.0,
                processed_rate: arrival_rate / 2.0,
                length_ms: 100.0,
                ..PeriodSample::default()
            },
            waiting: arrival_rate / 10.0,
            stalled: false,
            limited: false,
        }
    }

    #[test]
    fn every_worker_decides_each_period_on_the_same_combination_in_order() {
        // Two workers hear the same shares in different orders.
        let shares = [
            share(0, 0, 800.0, 100.0),
            share(1, 0, 200.0, 120.0),
            share(0, 1, 900.0, 140.0),
            share(1, 1, 100.0, 160.0),
        ];
        let mut a = Periods::new(2, 0, 3);
        let mut b = Periods::new(2, 1, 3);
        let (mut seen_a, mut seen_b) = (Vec::new(), Vec::new());
        for s in shares {
            a.hear(Message::Share(s));
            seen_a.extend(std::iter::from_fn(|| a.next_ready(2)));
        }
        for s in shares.iter().rev() {
            b.hear(Message::Share(*s));
            seen_b.extend(std::iter::from_fn(|| b.next_ready(2)));
        }
        let samples = |seen: &[Combined]| seen.iter().map(|c| c.sample).collect::<Vec<_>>();
        assert_eq!(samples(&seen_a), samples(&seen_b));
        assert_eq!(seen_a.len(), 2);
        // The mean rates and records waiting over both workers, the delay
        // of the worker that dates the output's oldest time earliest.
        assert_eq!(seen_a[0].sample.arrival_rate, 500.0);
        assert_eq!((seen_a[0].waiting, seen_b[0].waiting), (50.0, 50.0));
        assert_eq!(seen_a[0].sample.delay_ms, 120.0);
        assert_eq!(seen_a[1].sample.arrival_rate, 500.0);
        assert_eq!(seen_a[1].own.arrival_rate, 900.0);
        assert_eq!(seen_b[1].own.arrival_rate, 100.0);
        // Each worker's part of a rate drops the same fraction of its arrivals.
        let (mean, admitted) = (seen_a[1].sample, 250.0);
        let part_a = own_part(admitted, &seen_a[1].own, &mean);
        let part_b = own_part(admitted, &seen_b[1].own, &mean);
        assert!((part_a / 900.0 - part_b / 100.0).abs() < 1e-12);
        assert!((part_a + part_b - 2.0 * admitted).abs() < 1e-9);
    }

    #[test]
    fn a_worker_that_dates_no_time_does_not_lower_the_delay() {
        // Under the first-record clock a worker that reads nothing measures
        // no delay; the reader's is the output's.
        let mut reader = share(0, 0, 1000.0, 300.0);
        (reader.sample.max_age_ms, reader.sample.spread_ms) = (320.0, 20.0);
        let idle = share(1, 0, 0.0, 0.0);
        let combined = combine(&[reader, idle], 2);
        assert_eq!(combined.delay_ms, 300.0);
        assert_eq!(combined.max_age_ms, 320.0);
        assert_eq!(combined.spread_ms, 20.0);
        assert_eq!(combined.arrival_rate, 500.0);
    }

    #[test]
    fn a_worker_that_stopped_sending_is_waited_for_a_few_periods_then_counted_as_idle() {
        let mut periods = Periods::new(2, 0, 3);
        periods.hear(Message::Share(share(0, 0, 800.0, 100.0)));
        for ended in 1..=3 {
            assert!(periods.next_ready(ended).is_none(), "{ended} periods ended");
        }
        let late = periods.next_ready(4).expect("overdue");
        assert_eq!(late.sample.arrival_rate, 400.0);
        assert_eq!(late.sample.delay_ms, 100.0);
        // A share of a period already decided changes nothing.
        periods.hear(Message::Share(share(1, 0, 200.0, 120.0)));
        assert!(periods.next_ready(4).is_none());
    }

    #[test]
    fn a_stall_anywhere_holds_every_workers_decision() {
        let mut periods = Periods::new(2, 1, 3);
        periods.hear(Message::Share(Share {
            stalled: true,
            ..share(0, 0, 800.0, 100.0)
        }));
        periods.hear(Message::Share(share(1, 0, 200.0, 120.0)));
        assert!(periods.next_ready(1).expect("complete").stalled);
    }

    #[test]
    fn allowances_add_up_to_the_total_and_a_slow_reader_is_not_held_back() {
        let reader = |worker, sent: f64, limited| Share {
            limited,
            sample: PeriodSample {
                admitted_rate: sent,
                ..PeriodSample::default()
            },
            ..share(worker, 0, sent, 0.0)
        };
        let all = |admitted: f64, shares: &[Share], workers| {
            (0..workers)
                .map(|me| allowance(admitted, shares, workers, me))
                .collect::<Vec<_>>()
        };
        let cases: [(&[Share], usize, [f64; 3]); 4] = [
            // One reader held back, the others read nothing: it gets it all.
            (&[reader(0, 900.0, true), reader(1, 0.0, false)], 3, [3000.0, 0.0, 0.0]),
            // Two held back: half each; the third never reported.
            (
                &[reader(0, 900.0, true), reader(1, 100.0, true)],
                3,
                [1500.0, 1500.0, 0.0],
            ),
            // A slow reader gets what it sent and a quarter more, the one
            // held back the rest.
            (
                &[reader(0, 100.0, false), reader(1, 2000.0, true)],
                3,
                [125.0, 2875.0, 0.0],
            ),
            // Nobody held back and room to spare: what each sent and a
            // quarter more, and the rest evenly.
            (
                &[reader(0, 400.0, false), reader(1, 800.0, false)],
                3,
                [1000.0, 1500.0, 500.0],
            ),
        ];
        for (shares, workers, expected) in cases {
            let got = all(1000.0, shares, workers);
            for (got, expected) in got.iter().zip(expected) {
                assert!((got - expected).abs() < 1e-9, "{shares:?}: {got} vs {expected}");
            }
            assert!((got.iter().sum::<f64>() - 3000.0).abs() < 1e-9);
        }
        // A fast reader not held back, wanting more than the level, is
        // held to it.
        let got = all(500.0, &[reader(0, 900.0, false), reader(1, 2000.0, true)], 2);
        assert_eq!(got, [500.0, 500.0]);
        // No limit from the controller: none for any worker.
        assert_eq!(allowance(f64::INFINITY, &[reader(0, 9.0, true)], 2, 1), f64::INFINITY);
    }

    #[test]
    fn shares_far_ahead_are_not_kept() {
        let mut periods = Periods::new(2, 0, 3);
        for period in 0..10 * AHEAD {
            periods.hear(Message::Share(share(1, period, 100.0, 10.0)));
        }
        assert_eq!(periods.waiting.len(), AHEAD as usize);
        // This worker catches up: the periods kept decide with both shares,
        // the later ones without the peer's.
        for period in 0..AHEAD + 1 {
            periods.hear(Message::Share(share(0, period, 300.0, 10.0)));
        }
        let decided: Vec<f64> = std::iter::from_fn(|| periods.next_ready(AHEAD + 1))
            .map(|c| c.sample.arrival_rate)
            .collect();
        assert_eq!(decided.len(), AHEAD as usize);
        assert!(decided.iter().all(|&rate| rate == 200.0));
    }

    #[test]
    fn a_late_share_covers_every_period_it_spans() {
        // Worker 1 woke only after three periods had ended: one share
        // stands for all three, and both workers decide each of them.
        let mut periods = Periods::new(2, 0, 3);
        for period in 0..3 {
            periods.hear(Message::Share(share(0, period, 300.0, 10.0)));
        }
        assert!(periods.next_ready(3).is_none(), "waits for worker 1");
        periods.hear(Message::Share(Share {
            span: 3,
            ..share(1, 0, 100.0, 10.0)
        }));
        periods.hear(Message::Share(Share {
            span: 2,
            ..share(0, 3, 300.0, 10.0)
        }));
        periods.hear(Message::Share(share(1, 3, 100.0, 10.0)));
        let decided: Vec<(u64, f64)> = std::iter::from_fn(|| periods.next_ready(3))
            .map(|c| (c.period, c.sample.arrival_rate))
            .collect();
        assert_eq!(decided, [(0, 200.0), (1, 200.0), (2, 200.0), (3, 200.0)]);
        // A share of two periods' length counts half of it in each (the
        // shares here are 100 ms long).
        let fourth = periods.waiting[&4][0].expect("worker 0's share of period 4");
        assert_eq!(fourth.sample.length_ms, 50.0);
    }

    #[test]
    fn a_worker_that_left_is_not_waited_for() {
        let mut periods = Periods::new(2, 0, 3);
        periods.hear(Message::Share(share(1, 0, 100.0, 10.0)));
        periods.hear(Message::Left { worker: 1, from: 1 });
        for period in 0..3 {
            periods.hear(Message::Share(share(0, period, 300.0, 10.0)));
        }
        let decided: Vec<usize> = std::iter::from_fn(|| periods.next_ready(3))
            .map(|c| c.shares.len())
            .collect();
        assert_eq!(decided, [2, 1, 1]);
    }
}
