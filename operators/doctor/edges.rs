//! The dataflow's edges: per channel, the records each worker sent to each
//! worker, over all of them; and from these, whether an uneven operator's
//! skew is made at its own input's exchange or inherited from upstream.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::figures::WorkerFigures;
use super::spread::Spread;

/// One channel over every worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelReport {
    /// The operator it leaves (a scope's own address for the scope's
    /// input), and the output port.
    pub source: (Vec<usize>, usize),
    /// The operator it enters (a scope's own address for the scope's
    /// output), and the input port.
    pub target: (Vec<usize>, usize),
    /// Records it carried, over all workers.
    pub records: u64,
    /// Records each worker sent on it.
    pub sent: Vec<u64>,
    /// Records each worker received on it.
    pub received: Vec<u64>,
    /// `(from, to, records)` for every pair of workers it carried records
    /// between, `from == to` included.
    pub between: Vec<(usize, usize, u64)>,
}

/// Where an uneven operator's skew comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    /// Its input's exchange made it: its records were sent more evenly
    /// than they were received.
    Exchange,
    /// It came as it is: its records were received as unevenly as they
    /// were sent, from an uneven operator upstream.
    Inherited,
    /// Its input's exchange sends every record to one worker: a gather by
    /// design (a coordinator, a final merge), which no repartitioning
    /// evens out.
    Gather,
}

/// Above this busiest over mean, records are uneven.
pub(crate) const UNEVEN: f64 = 1.2;

/// Every channel that carried records, in the order of its target.
pub(crate) fn channels(workers: &[WorkerFigures]) -> Vec<ChannelReport> {
    let peers = workers.len();
    type Ends = ((Vec<usize>, usize), (Vec<usize>, usize));
    let mut by_ends: BTreeMap<Ends, Vec<Vec<u64>>> = BTreeMap::new();
    for (to, figures) in workers.iter().enumerate() {
        for channel in &figures.channels {
            let matrix = by_ends
                .entry((channel.target.clone(), channel.source.clone()))
                .or_insert_with(|| vec![vec![0; peers]; peers]);
            for (from, &records) in channel.from.iter().enumerate().filter(|&(from, _)| from < peers) {
                matrix[from][to] += records;
            }
        }
    }
    by_ends
        .into_iter()
        .map(|((target, source), matrix)| {
            let sent = matrix.iter().map(|row| row.iter().sum()).collect();
            let received = (0..peers).map(|to| matrix.iter().map(|row| row[to]).sum()).collect();
            let between: Vec<(usize, usize, u64)> = matrix
                .iter()
                .enumerate()
                .flat_map(|(from, row)| {
                    row.iter()
                        .enumerate()
                        .filter(|&(_, &records)| records > 0)
                        .map(move |(to, &records)| (from, to, records))
                })
                .collect();
            ChannelReport {
                source,
                target,
                records: between.iter().map(|&(_, _, records)| records).sum(),
                sent,
                received,
                between,
            }
        })
        .collect()
}

/// Where the skew of the operator at `address` comes from, if its records
/// are uneven: at its inputs' exchange if they crossed between workers
/// and arrived more unevenly (by a tenth) than they were sent.
pub(crate) fn origin(address: &[usize], channels: &[ChannelReport], peers: usize) -> Option<Origin> {
    let (mut sent, mut received, mut crossed) = (vec![0.0; peers], vec![0.0; peers], false);
    for channel in channels.iter().filter(|c| c.target.0 == address) {
        for (worker, (&s, &r)) in channel.sent.iter().zip(&channel.received).enumerate() {
            sent[worker] += s as f64;
            received[worker] += r as f64;
        }
        crossed |= channel.between.iter().any(|&(from, to, _)| from != to);
    }
    let receivers = received.iter().filter(|&&r| r > 0.0).count();
    let (sent, received) = (Spread::of(&sent), Spread::of(&received));
    if received.busiest_over_mean < UNEVEN {
        None
    } else if crossed && receivers == 1 {
        Some(Origin::Gather)
    } else if crossed && received.busiest_over_mean > 1.1 * sent.busiest_over_mean {
        Some(Origin::Exchange)
    } else {
        Some(Origin::Inherited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::figures::ChannelFigures;

    /// Worker `to`'s figures: channel [0, 1] → [0, 2] delivered `from`.
    fn received(from: Vec<u64>) -> WorkerFigures {
        WorkerFigures {
            operators: Vec::new(),
            scopes: Vec::new(),
            channels: vec![ChannelFigures {
                source: (vec![0, 1], 0),
                target: (vec![0, 2], 0),
                from,
            }],
            period_s: 1.0,
            windows: Vec::new(),
        }
    }

    #[test]
    fn the_matrix_adds_up_and_an_exchange_that_concentrates_is_named() {
        // Each worker sends 10; worker 0 receives 16 of them.
        let workers = [
            received(vec![8, 4, 4]),
            received(vec![1, 3, 3]),
            received(vec![1, 3, 3]),
        ];
        let channels = channels(&workers);
        assert_eq!(channels.len(), 1);
        assert_eq!(channels[0].sent, [10, 10, 10]);
        assert_eq!(channels[0].received, [16, 7, 7]);
        assert_eq!(channels[0].records, 30);
        assert!(channels[0].between.contains(&(1, 0, 4)));
        assert_eq!(origin(&[0, 2], &channels, 3), Some(Origin::Exchange));
    }

    #[test]
    fn every_record_sent_to_one_worker_is_a_gather() {
        let workers = [received(vec![5, 5, 5]), received(vec![]), received(vec![])];
        assert_eq!(origin(&[0, 2], &channels(&workers), 3), Some(Origin::Gather));
    }

    #[test]
    fn records_kept_on_their_worker_inherit_the_skew_and_even_ones_have_none() {
        let workers = [received(vec![16]), received(vec![0, 7]), received(vec![0, 0, 7])];
        assert_eq!(origin(&[0, 2], &channels(&workers), 3), Some(Origin::Inherited));
        let even = [received(vec![5, 5]), received(vec![5, 5])];
        assert_eq!(origin(&[0, 2], &channels(&even), 2), None);
    }
}
