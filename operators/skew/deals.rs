//! The hot keys' deals a worker knows: for each hot key, the workers its
//! updates go to from each time on, with their shares, and which of the
//! key's deals routes an update.

use timely::progress::Timestamp;

use super::decision::Shares;
use super::key_index::{key_route, KeyIndex};
use super::picker::Picker;

/// A key turned hot, or dealt anew, from the time it is sent at: its key
/// and the workers its updates go to from then on, with their shares.
pub(crate) type HotKey<K> = (K, Shares);

/// Which of a hot key's deals routes its updates.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Deal {
    /// The latest decided at or before the update's time: a join's sides
    /// follow the key's load, as the other side's copies are on every
    /// worker the key was ever dealt to.
    Latest,
    /// The first: every update of a record goes to one worker, whatever
    /// later deals say, so that a reduction's retraction meets its
    /// insertion.
    First,
}

/// Each hot key's deals, in time order, with the time each holds from.
#[derive(Debug)]
pub(crate) struct Deals<K, T> {
    hot: KeyIndex<K, Vec<(T, Picker)>>,
    /// The keys dealt anew since the last [`take_dealt`](Self::take_dealt),
    /// kept only for a side whose records move with their deals.
    dealt: Option<Vec<K>>,
}

impl<K: Eq + Clone + differential_dataflow::Hashable, T: Timestamp> Deals<K, T> {
    /// No key hot.
    pub(crate) fn new() -> Self {
        Deals {
            hot: KeyIndex::default(),
            dealt: None,
        }
    }

    /// From now on, keeps the keys dealt anew for [`take_dealt`](Self::take_dealt).
    pub(crate) fn keep_dealt(&mut self) {
        self.dealt.get_or_insert_with(Vec::new);
    }

    /// The keys dealt anew since the last call (none unless
    /// [`keep_dealt`](Self::keep_dealt) was called).
    pub(crate) fn take_dealt(&mut self) -> Vec<K> {
        self.dealt.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Routes `key`'s updates by `shares` from `time` on.
    /// Idempotent: a deal learned twice (by two operators that see the
    /// decisions) is kept once.
    pub(crate) fn learn(&mut self, time: T, (key, shares): HotKey<K>) {
        let route = key_route(&key);
        let deals = self.hot.get_or_insert_with(key.clone(), route, Vec::new);
        if deals.last().is_none_or(|(since, _)| *since != time) {
            deals.push((time, Picker::new(&shares)));
            if let Some(dealt) = &mut self.dealt {
                dealt.push(key);
            }
        }
    }

    /// Whether any key is hot.
    pub(crate) fn any_hot(&self) -> bool {
        !self.hot.is_empty()
    }

    /// The worker a record of the hot `key` is reduced on first: by its
    /// first deal's shares and `record`, the hash of the rest of it.
    pub(crate) fn first_part(&self, key: &K, record: u64) -> usize {
        self.part(key, None, Deal::First, || record)
            .expect("a hot key's deal is learned before any of its records is routed to a part")
    }

    /// The worker a record of `key` belongs on by its `deal` that holds at
    /// `time` (any time, for `None`), if the key is hot then (`record`
    /// hashes the rest of the record).
    #[inline]
    pub(crate) fn part(&self, key: &K, time: Option<&T>, deal: Deal, record: impl FnOnce() -> u64) -> Option<usize> {
        self.part_of_route(key, key_route(key), time, deal, record)
    }

    /// [`part`](Self::part), for a key of route hash `route`.
    #[inline]
    pub(crate) fn part_of_route(
        &self,
        key: &K,
        route: u64,
        time: Option<&T>,
        deal: Deal,
        record: impl FnOnce() -> u64,
    ) -> Option<usize> {
        self.picker(key, route, time, deal)
            .map(|picker| picker.pick_record(record(), route))
    }

    /// The picker of `key`'s `deal` that holds at `time` (any time, for
    /// `None`), if the key is hot then.
    #[inline]
    fn picker(&self, key: &K, route: u64, time: Option<&T>, deal: Deal) -> Option<&Picker> {
        let deals = self.hot.get(key, route)?;
        let holds = |since: &T| time.is_none_or(|time| since.less_equal(time));
        match deal {
            Deal::Latest => deals.iter().rev().find(|(since, _)| holds(since)),
            Deal::First => deals.first().filter(|(since, _)| holds(since)),
        }
        .map(|(_, picker)| picker)
    }
}
