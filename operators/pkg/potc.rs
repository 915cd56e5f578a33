//! Power of two choices with a routing table: a key is placed once, on the
//! less loaded of its two candidates, and never split.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::common::hash::StableHasher;

use super::candidates::two_choices;
use super::grouping::{Grouping, Router};
use super::partial_key::less_loaded;

/// The PoTC policy: the first record of a key fixes its worker.
#[derive(Debug, Clone, Copy, Default)]
pub struct Potc;

/// A sender's PoTC state: its loads and the table of placed keys.
#[derive(Debug, Clone)]
pub struct PotcRouter {
    loads: Vec<u64>,
    table: HashMap<u64, usize, BuildHasherDefault<StableHasher>>,
}

impl PotcRouter {
    /// Number of keys in the routing table (the memory PoTC pays).
    pub fn table_len(&self) -> usize {
        self.table.len()
    }
}

impl Grouping for Potc {
    type Router = PotcRouter;
    fn router(&self, peers: usize, _sender: usize) -> PotcRouter {
        PotcRouter {
            loads: vec![0; peers],
            table: HashMap::default(),
        }
    }
}

impl Router for PotcRouter {
    #[inline]
    fn route(&mut self, key: u64, cost: u64) -> usize {
        let loads = &self.loads;
        let destination = *self
            .table
            .entry(key)
            .or_insert_with(|| less_loaded(two_choices(key, loads.len()), loads).0);
        self.loads[destination] += cost;
        destination
    }
}
