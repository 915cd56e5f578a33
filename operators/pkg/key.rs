//! Key grouping: every record of a key goes to the key's first hash choice.

use super::candidates::first_choice;
use super::grouping::{Grouping, Router};

/// The key-grouping policy (Storm's fields grouping).
#[derive(Debug, Clone, Copy, Default)]
pub struct Key;

/// Key grouping's (stateless) router.
#[derive(Debug, Clone)]
pub struct KeyRouter {
    peers: usize,
}

impl Grouping for Key {
    type Router = KeyRouter;
    fn router(&self, peers: usize, _sender: usize) -> KeyRouter {
        KeyRouter { peers }
    }
}

impl Router for KeyRouter {
    #[inline]
    fn route(&mut self, key: u64, _cost: u64) -> usize {
        first_choice(key, self.peers)
    }
}
