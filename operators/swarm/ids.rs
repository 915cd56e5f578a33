//! Partition ids: unique, never reused, minted by any worker without asking.

use serde::{Deserialize, Serialize};

/// The id of a partition.
pub type PartitionId = u64;

/// Mints ids for one worker from its own sequence: worker `w` of `W` mints
/// `base + w`, `base + w + W`, `base + w + 2W`, ... so no two workers ever
/// mint the same id and no id is minted twice. `base` is the first id the
/// initial plan left unused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdMint {
    next: PartitionId,
    stride: u64,
}

impl IdMint {
    /// The mint of `worker` among `workers`, above `base`.
    ///
    /// # Panics
    ///
    /// If `worker` is not below `workers` (as timely's worker indices are).
    pub fn new(base: PartitionId, worker: usize, workers: usize) -> Self {
        assert!(worker < workers, "worker {worker} is not below {workers}");
        IdMint {
            next: base + worker as u64,
            stride: workers as u64,
        }
    }

    /// A fresh id.
    pub fn mint(&mut self) -> PartitionId {
        let id = self.next;
        self.next += self.stride;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn workers_mint_disjoint_ids_above_the_base() {
        let mut seen = HashSet::new();
        for worker in 0..3 {
            let mut mint = IdMint::new(10, worker, 3);
            for _ in 0..100 {
                let id = mint.mint();
                assert!(id >= 10);
                assert!(seen.insert(id), "{id} minted twice");
            }
        }
    }
}
