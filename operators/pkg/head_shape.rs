//! How many choices the head of a skewed stream needs (D-Choices, Nasir et
//! al., ICDE 2016): the smallest d at which the head, spread over d hashed
//! workers each, and the tail, spread over two, can still balance.

/// The default head threshold θ = 2/(n·T) with T = 10, i.e. 1/(5n): a key
/// above it carries more than a fifth of one worker's fair share.
pub(crate) fn default_threshold(peers: usize) -> f64 {
    1.0 / (5.0 * peers.max(1) as f64)
}

/// The head of a stream as a sender estimates it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadShape {
    /// Share of the most frequent key, p1.
    pub top: f64,
    /// Share of all head keys together, p_H.
    pub share: f64,
    /// Number of head keys, |H|.
    pub keys: usize,
}

/// Slack of the balance conditions.
const EPSILON: f64 = 1e-3;

/// The number of choices for head keys among `peers` workers: from
/// max(2, round(p1·n)) up, the first d (at most n) at which both hold, with
/// p_T = 1 − p_H, B = 1 − ((n−1)/n)^(|H|·d) and b = 1 − ((n−1)/n)^d:
/// (a) the head and the tail fit on the workers the head reaches,
///     p_H + p_T·B² ≤ B + ε;
/// (b) the top key, the rest of the head and the tail fit on the top key's
///     d workers, p1 + (p_H − p1)·b^d + p_T·b² ≤ b + ε.
pub fn head_choices(peers: usize, head: HeadShape) -> usize {
    let n = peers.max(1);
    if n <= 2 {
        return n;
    }
    let miss = (n as f64 - 1.0) / n as f64;
    let tail = 1.0 - head.share;
    let start = ((head.top * n as f64).round() as usize).clamp(2, n);
    (start..=n)
        .find(|&d| {
            let reach = 1.0 - miss.powf((head.keys.max(1) * d) as f64);
            let own = 1.0 - miss.powf(d as f64);
            let spread = head.share + tail * reach * reach <= reach + EPSILON;
            let top = head.top + (head.share - head.top) * own.powf(d as f64) + tail * own * own <= own + EPSILON;
            spread && top
        })
        .unwrap_or(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(top: f64) -> HeadShape {
        HeadShape {
            top,
            share: top,
            keys: 1,
        }
    }

    #[test]
    fn d_grows_with_the_top_share_and_stops_at_n() {
        for n in [5, 10, 50, 100] {
            let mut previous = 2;
            for step in 1..=100 {
                let top = step as f64 / 100.0;
                let d = head_choices(n, shape(top));
                assert!((2..=n).contains(&d), "n {n} p1 {top}: d {d}");
                assert!(d >= previous, "n {n}: d fell from {previous} to {d} at p1 {top}");
                // At least the top key's share of the workers.
                assert!(
                    d as f64 >= (top * n as f64).round().min(n as f64),
                    "n {n} p1 {top}: d {d}"
                );
                previous = d;
            }
            assert_eq!(head_choices(n, shape(1.0)), n);
        }
    }

    #[test]
    fn a_light_head_needs_few_choices() {
        // p1 = 1/(5n): barely a head, two choices would do.
        let d = head_choices(100, shape(0.002));
        assert!(d <= 4, "{d}");
        // A key carrying 10 % of 100 workers' stream needs at least 10.
        assert!(head_choices(100, shape(0.1)) >= 10);
    }
}
