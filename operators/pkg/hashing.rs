//! Key grouping: every record of a key goes to the key's first hash choice.

use super::candidates::first_choice;
use super::router::{Grouping, Router};

/// The key-grouping policy (Storm's fields grouping).
#[derive(Debug, Clone, Copy, Default)]
pub struct Hashing;

/// Key grouping's (stateless) router.
#[derive(Debug, Clone)]
pub struct HashingRouter {
    peers: usize,
}

impl Grouping for Hashing {
    type Router = HashingRouter;
    fn router(&self, peers: usize, _sender: usize) -> HashingRouter {
        HashingRouter { peers }
    }
}

impl Router for HashingRouter {
    #[inline]
    fn route(&mut self, key: u64, _cost: u64) -> usize {
        first_choice(key, self.peers)
    }
}
