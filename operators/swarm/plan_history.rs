//! Versions of the plan by the time from which each holds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::common::Error;

use super::index::{GlobalIndex, PlanChange};

/// Changes to the plan that hold from epoch `effective` on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlanUpdate {
    /// The first epoch the changed plan routes.
    pub effective: u64,
    /// The changes, applied in order.
    pub changes: Vec<PlanChange>,
    /// The mean work per worker in the round that decided it: below how
    /// much a shared partition needs fewer holders.
    pub mean_work: f64,
}

/// The plan as it was and will be at each epoch: the initial index, then one
/// version per non-empty update.
#[derive(Debug, Clone)]
pub(crate) struct PlanHistory {
    versions: BTreeMap<u64, GlobalIndex>,
}

impl PlanHistory {
    /// A history that starts with `initial` at epoch 0.
    pub(crate) fn new(initial: GlobalIndex) -> Self {
        PlanHistory {
            versions: BTreeMap::from([(0, initial)]),
        }
    }

    /// Changes the initial plan before any update: the opening.
    pub(crate) fn open(&mut self, changes: &[PlanChange]) -> Result<(), Error> {
        if self.versions.len() != 1 {
            return Err(Error::invalid("plan opening", "the plan has changed already"));
        }
        let index = self.versions.get_mut(&0).expect("version 0 exists");
        for change in changes {
            index.apply(change)?;
        }
        Ok(())
    }

    /// Adds the version `update` makes of the latest one. Updates must come
    /// in effective-time order.
    pub(crate) fn install(&mut self, update: &PlanUpdate) -> Result<(), Error> {
        if update.changes.is_empty() {
            return Ok(());
        }
        let (&latest, index) = self.versions.last_key_value().expect("never empty");
        if update.effective <= latest {
            return Err(Error::invalid(
                "plan update",
                format!(
                    "effective at {} but the plan already changes at {latest}",
                    update.effective
                ),
            ));
        }
        let mut next = index.clone();
        for change in &update.changes {
            next.apply(change)?;
        }
        self.versions.insert(update.effective, next);
        Ok(())
    }

    /// The latest version.
    pub(crate) fn latest(&self) -> &GlobalIndex {
        self.versions
            .last_key_value()
            .map(|(_, index)| index)
            .expect("never empty")
    }

    /// The plan that routes epoch `time`.
    pub(crate) fn at(&self, time: u64) -> &GlobalIndex {
        self.versions
            .range(..=time)
            .next_back()
            .map(|(_, index)| index)
            .expect("version 0 exists")
    }

    /// Drops the versions no epoch at or after `time` uses.
    pub(crate) fn forget_before(&mut self, time: u64) {
        if let Some((&keep, _)) = self.versions.range(..=time).next_back() {
            self.versions = self.versions.split_off(&keep);
        }
    }
}
