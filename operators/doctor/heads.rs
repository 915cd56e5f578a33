//! The heads PKG's D-Choices and W-Choices pacts spread wider than two
//! workers, as their senders last logged them
//! ([`PkgEvent::Head`](crate::pkg::events::PkgEvent::Head)), with the keys' names
//! where the pact has a name function
//! ([`Grouped::with_key_names`](crate::pkg::Grouped::with_key_names)).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::figures::Figures;
use crate::pkg::events::PkgEvent;
use crate::pkg::sim::HeadKey;

/// One pact's head over all its senders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadReport {
    /// The operator the pact feeds, and the input port.
    pub target: (Vec<usize>, usize),
    /// That operator's name.
    pub operator: String,
    /// The most workers a sender gives its head keys (D-Choices' d).
    pub choices: usize,
    /// The head keys, those in the most senders' heads first.
    pub keys: Vec<HeadKeyReport>,
}

/// One key of a pact's head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadKeyReport {
    /// Its fingerprint, as the pact's key function returned it.
    pub key: u64,
    /// Its `Debug` form, if a sender named it.
    pub name: Option<String>,
    /// The most workers a sender may send it to.
    pub workers: usize,
    /// How many senders have it in their head.
    pub senders: usize,
}

/// One sender's head of one pact, as a worker sends it for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SenderHead {
    target: (Vec<usize>, usize),
    choices: usize,
    keys: Vec<HeadKey>,
    names: Vec<(u64, String)>,
}

/// A sender's head of one pact: its choices, its keys, their names.
type Head = (usize, Vec<HeadKey>, Vec<(u64, String)>);

/// This worker's pacts' latest heads, by channel.
#[derive(Debug, Default)]
pub(crate) struct Heads(BTreeMap<usize, Head>);

impl Heads {
    /// Keeps a head event's head, the latest of its channel.
    pub(crate) fn event(&mut self, event: &PkgEvent) {
        if let PkgEvent::Head {
            channel,
            choices,
            keys,
            names,
            ..
        } = event
        {
            self.0.insert(*channel, (*choices, keys.clone(), names.clone()));
        }
    }

    /// The heads of the channels `figures` keeps (those of forgotten
    /// dataflows are forgotten here too), empty ones left out.
    pub(crate) fn of_known(&mut self, figures: &Figures) -> Vec<SenderHead> {
        self.0.retain(|&channel, _| figures.target_of(channel).is_some());
        self.0
            .iter()
            .filter(|(_, (_, keys, _))| !keys.is_empty())
            .filter_map(|(&channel, (choices, keys, names))| {
                Some(SenderHead {
                    target: figures.target_of(channel)?.clone(),
                    choices: *choices,
                    keys: keys.clone(),
                    names: names.clone(),
                })
            })
            .collect()
    }
}

/// Every sender's heads, by pact, with `name` naming the operator at an
/// address.
pub(crate) fn merge(senders: Vec<SenderHead>, name: impl Fn(&[usize]) -> String) -> Vec<HeadReport> {
    type Target = (Vec<usize>, usize);
    let mut pacts: BTreeMap<Target, (usize, BTreeMap<u64, HeadKeyReport>)> = BTreeMap::new();
    for sender in senders {
        let (choices, keys) = pacts.entry(sender.target).or_default();
        *choices = (*choices).max(sender.choices);
        let names: BTreeMap<u64, String> = sender.names.into_iter().collect();
        for head in sender.keys {
            let key = keys.entry(head.key).or_insert(HeadKeyReport {
                key: head.key,
                name: None,
                workers: 0,
                senders: 0,
            });
            key.workers = key.workers.max(head.workers);
            key.senders += 1;
            if key.name.is_none() {
                key.name = names.get(&head.key).cloned();
            }
        }
    }
    pacts
        .into_iter()
        .map(|(target, (choices, keys))| {
            let mut keys: Vec<HeadKeyReport> = keys.into_values().collect();
            keys.sort_by_key(|key| std::cmp::Reverse(key.senders));
            HeadReport {
                operator: name(&target.0),
                target,
                choices,
                keys,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_heads_merge_by_pact_with_the_names_any_sender_gave() {
        let head = |key, workers| HeadKey { key, workers };
        let sender = |keys: Vec<HeadKey>, names: Vec<(u64, &str)>| SenderHead {
            target: (vec![0, 3], 0),
            choices: 3,
            keys,
            names: names.into_iter().map(|(key, name)| (key, name.to_owned())).collect(),
        };
        let senders = vec![
            sender(vec![head(7, 3), head(9, 3)], vec![(9, "nine")]),
            sender(vec![head(7, 4)], vec![(7, "seven")]),
        ];
        let report = merge(senders, |address| format!("op {address:?}"));
        assert_eq!(report.len(), 1);
        assert_eq!(report[0].operator, "op [0, 3]");
        let keys: Vec<(u64, Option<&str>, usize, usize)> = report[0]
            .keys
            .iter()
            .map(|key| (key.key, key.name.as_deref(), key.workers, key.senders))
            .collect();
        assert_eq!(keys, [(7, Some("seven"), 4, 2), (9, Some("nine"), 3, 1)]);
    }
}
