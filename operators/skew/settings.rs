//! The settings of the skew-proof operators: when a key is hot, how far a
//! worker may be over the mean before a key of it is split, how many
//! keys may be hot, and, for the counts that split nothing, when a key is
//! frequent enough to be summed before the exchange.

use crate::common::Error;

/// How a skew-proof operator finds hot keys and splits them.
///
/// A key is hot once its updates, decayed over the last few times, reach
/// `hot_share` of a worker's mean share (and at least
/// [`min_updates`](Skew::with_min_updates)) while its owner carries more
/// than the mean load by over [`tolerance`](Skew::with_tolerance); it is then dealt over at most
/// as many workers as would keep each part under that share (at least 2),
/// the least loaded, each taking what brings it up to a common level (so
/// a key may stay on one worker, the least loaded, where that is best). At
/// most [`max_hot`](Skew::with_max_hot) keys are ever hot: each costs
/// copies of the other side's updates for its key on its extra workers,
/// and once the limit is reached no other key is split. `skew_count` and
/// `skew_distinct` split no key: they sum a worker's frequent keys before
/// the exchange, from [`combine_share`](Skew::with_combine_share) of its
/// updates.
///
/// ```
/// use equipoise::skew::Skew;
///
/// let skew = Skew::default().with_hot_share(0.25)?.with_tolerance(0.1)?.with_max_hot(256)?;
/// assert!(Skew::default().with_tolerance(-0.1).is_err());
/// assert!(Skew::default().with_tolerance(f64::NAN).is_err());
/// assert!(Skew::default().with_hot_share(0.0).is_err());
/// assert!(Skew::default().with_combine_share(0.01).is_ok());
/// assert!(Skew::default().with_combine_share(1.5).is_err());
/// # let _ = skew;
/// # Ok::<(), equipoise::common::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Skew {
    pub(crate) hot_share: f64,
    pub(crate) tolerance: f64,
    pub(crate) min_updates: u64,
    pub(crate) max_hot: usize,
    pub(crate) combine_share: f64,
}

impl Default for Skew {
    fn default() -> Self {
        Skew {
            hot_share: 0.1,
            tolerance: 0.05,
            min_updates: 64,
            max_hot: 4096,
            combine_share: 1.0 / 2048.0,
        }
    }
}

impl Skew {
    /// A key is hot once it carries this share of a worker's mean load, in
    /// (0, 1] (default 0.1: a key with a tenth of a worker's work is
    /// dealt).
    pub fn with_hot_share(self, hot_share: f64) -> Result<Self, Error> {
        let hot_share = share(hot_share, "skew hot share", "a worker's load")?;
        Ok(Skew { hot_share, ..self })
    }

    /// The imbalance tolerated: a new hot key is split only while its
    /// owner carries more than (1 + `tolerance`) × the mean load (default
    /// 0.05), as the decayed counts tell it, with the keys already split
    /// dealt by their shares; each side of a join by its own load. A key
    /// on a worker within it stays whole, as splitting it would cost
    /// (copies of the other side, a second level of reduction) more than
    /// it evens out. At 0 a key is split whenever its owner is over the
    /// mean; at infinity no new key is split. A key already split is dealt
    /// anew as its share of the updates doubles whatever the tolerance. At
    /// least 0.
    pub fn with_tolerance(self, tolerance: f64) -> Result<Self, Error> {
        if tolerance.is_nan() || tolerance < 0.0 {
            return Err(Error::invalid(
                "skew tolerance",
                format!("{tolerance}: must be a share of the mean load, at least 0"),
            ));
        }
        Ok(Skew { tolerance, ..self })
    }

    /// A key is hot only once its decayed count of updates reaches this
    /// (default 64), so that a few updates in a quiet time split nothing.
    pub fn with_min_updates(self, min_updates: u64) -> Result<Self, Error> {
        Ok(Skew { min_updates, ..self })
    }

    /// At most this many keys are ever hot (on each side of a join), at
    /// least 1 (default 4096).
    pub fn with_max_hot(self, max_hot: usize) -> Result<Self, Error> {
        if max_hot == 0 {
            return Err(Error::invalid("skew max hot keys", "0: must be at least 1"));
        }
        Ok(Skew { max_hot, ..self })
    }

    /// `skew_count` and `skew_distinct` only, which split no key: a worker
    /// sums a key's updates per time before the exchange once the key
    /// carries this share of its updates, in (0, 1] (default 1/2048: such a
    /// key recurs within each delivery of a time, and the keys above it
    /// carry most of a skewed stream; every key is summed until a first
    /// sample of about a thousand updates is in).
    pub fn with_combine_share(self, combine_share: f64) -> Result<Self, Error> {
        let combine_share = share(combine_share, "skew combine share", "a worker's updates")?;
        Ok(Skew { combine_share, ..self })
    }

    /// Whether a sender reports a key it counted `count` times out of
    /// `total` at one time to the worker deciding: a key at the hot share
    /// on every sender passes at half of it.
    pub(crate) fn reports(&self, count: u64, total: u64, peers: usize) -> bool {
        count as f64 * 2.0 * peers as f64 >= self.hot_share * total as f64
    }
}

/// `value` if it is a share of `of` in (0, 1]; else the error naming `setting`.
fn share(value: f64, setting: &str, of: &str) -> Result<f64, Error> {
    if value > 0.0 && value <= 1.0 {
        Ok(value)
    } else {
        Err(Error::invalid(
            setting,
            format!("{value}: must be a share of {of} in (0, 1]"),
        ))
    }
}
