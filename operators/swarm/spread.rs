//! Spreading a hot partition over several workers in one round (ours).
//! A pair's reduction evens two workers; when the busiest worker's excess
//! over the mean is more than the least loaded worker can take without
//! rising above it, a round of pairs halves the excess at best, and a
//! cell that carries several workers' share of the load keeps its holder
//! the busiest for as many rounds. So the coordinator hands pieces of the
//! worker's hottest shareable partition (one cell, or shared already) to
//! as many of the least loaded workers as the excess needs, each filled
//! up to the mean, in one update.

/// The most workers one spread hands pieces to in a round.
pub(crate) const MOST_PARTNERS: usize = 8;

/// The pieces, in the units of `costs`, that worker `high` hands to the
/// least loaded workers still `free` (each its own, below the mean by
/// `margin`, a share): each filled to the mean and the margin, until
/// `high` is there too, `MOST_PARTNERS` at most. `hot` is `high`'s part of
/// the partition shared: `high` keeps a piece of it as large as any it gives.
pub(crate) fn plan_spread(costs: &[f64], high: usize, hot: f64, free: &[bool], margin: f64) -> Vec<(usize, f64)> {
    let mean = costs.iter().sum::<f64>() / costs.len().max(1) as f64;
    let fill = mean * (1.0 + margin);
    let mut partners: Vec<usize> = (0..costs.len())
        .filter(|&w| w != high && free[w] && costs[w] < mean * (1.0 - margin))
        .collect();
    partners.sort_by(|&a, &b| costs[a].total_cmp(&costs[b]).then(a.cmp(&b)));
    let mut excess = costs[high] - fill;
    let mut pieces = Vec::new();
    for w in partners.into_iter().take(MOST_PARTNERS) {
        if excess <= 0.0 {
            break;
        }
        let piece = (fill - costs[w]).min(excess);
        pieces.push((w, piece));
        excess -= piece;
    }
    let handed: f64 = pieces.iter().map(|(_, piece)| piece).sum();
    let most = hot * pieces.len() as f64 / (pieces.len() + 1) as f64;
    if handed > most {
        for (_, piece) in &mut pieces {
            *piece *= most / handed;
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARGIN: f64 = 0.05;

    #[test]
    fn a_hot_worker_is_filled_out_to_the_least_loaded_up_to_the_mean() {
        // Mean 3: worker 0 at 9 with a hot cell of 8; worker 4 at the mean.
        let costs = [9.0, 0.0, 1.0, 2.0, 3.0];
        let pieces = plan_spread(&costs, 0, 8.0, &[true; 5], MARGIN);
        let fill = 3.0 * (1.0 + MARGIN);
        // The least loaded first, each up to the fill, until worker 0 is there.
        assert_eq!(pieces.iter().map(|&(w, _)| w).collect::<Vec<_>>(), vec![1, 2, 3]);
        let expected = [fill, fill - 1.0, 9.0 - fill - (fill + fill - 1.0)];
        for ((_, piece), want) in pieces.iter().zip(expected) {
            assert!((piece - want).abs() < 1e-9, "{pieces:?}");
        }
        let after = costs[0] - pieces.iter().map(|p| p.1).sum::<f64>();
        assert!((after - fill).abs() < 1e-9);
    }

    #[test]
    fn the_worker_keeps_a_piece_as_large_as_any_it_gives_and_busy_workers_take_none() {
        let costs = [10.0, 0.0, 0.0, 0.0, 0.0];
        let free = [true, true, false, true, true];
        let pieces = plan_spread(&costs, 0, 3.0, &free, MARGIN);
        assert!(pieces.iter().all(|&(w, _)| w != 2));
        let handed: f64 = pieces.iter().map(|p| p.1).sum();
        assert!((handed - 3.0 * 3.0 / 4.0).abs() < 1e-9, "{pieces:?}");
        assert!(plan_spread(&[1.0, 1.0], 0, 1.0, &[true; 2], MARGIN).is_empty());
    }
}
