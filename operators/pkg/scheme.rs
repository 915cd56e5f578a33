//! The schemes of the PKG paper's comparison (and D-/W-Choices), chosen at
//! run time: one enum, and the router that dispatches to each policy's own.

use std::fmt;
use std::str::FromStr;

use crate::common::Error;

use super::grouping::{Grouping, HeadKey, Router};
use super::head_aware::{HeadAware, HeadAwareRouter};
use super::key::{Key, KeyRouter};
use super::partial_key::{Pkg, PkgRouter};
use super::potc::{Potc, PotcRouter};
use super::shuffle::{Shuffle, ShuffleRouter};

/// The schemes of the PKG paper's comparison (key, shuffle, PoTC, PKG) and
/// D-/W-Choices, chosen at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Key grouping: the first hash of the key (one worker per key).
    Key,
    /// Shuffle grouping: round-robin (every key on every worker).
    Shuffle,
    /// Power of two choices with a routing table: the less loaded of the two
    /// candidates when the key is first seen, then always that worker.
    Potc,
    /// Partial key grouping: the less loaded of the two candidates, per record.
    Pkg,
    /// D-Choices: PKG, but head keys (by the sender's sketch) to the least
    /// loaded of d hashed candidates.
    #[cfg_attr(feature = "clap", value(name = "dchoices"))]
    DChoices,
    /// W-Choices: PKG, but head keys to the least loaded of all workers.
    #[cfg_attr(feature = "clap", value(name = "wchoices"))]
    WChoices,
}

impl Scheme {
    /// All schemes, in the order reports list them.
    pub const ALL: [Scheme; 6] = [
        Scheme::Key,
        Scheme::Shuffle,
        Scheme::Potc,
        Scheme::Pkg,
        Scheme::DChoices,
        Scheme::WChoices,
    ];

    /// Whether the scheme splits keys by PKG (all of them, or under
    /// D-/W-Choices the tail), so that PKG's slack applies to it.
    pub fn takes_slack(self) -> bool {
        matches!(self, Scheme::Pkg | Scheme::DChoices | Scheme::WChoices)
    }

    /// The scheme's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Key => "key",
            Scheme::Shuffle => "shuffle",
            Scheme::Potc => "potc",
            Scheme::Pkg => "pkg",
            Scheme::DChoices => "dchoices",
            Scheme::WChoices => "wchoices",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scheme {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self, Error> {
        Scheme::ALL
            .into_iter()
            .find(|scheme| scheme.name() == text)
            .ok_or_else(|| {
                Error::invalid(
                    "grouping scheme",
                    format!("`{text}`: expected key, shuffle, potc, pkg, dchoices or wchoices"),
                )
            })
    }
}

/// The router of a [`Scheme`].
#[derive(Debug, Clone)]
pub enum SchemeRouter {
    /// See [`Scheme::Key`].
    Key(KeyRouter),
    /// See [`Scheme::Shuffle`].
    Shuffle(ShuffleRouter),
    /// See [`Scheme::Potc`].
    Potc(PotcRouter),
    /// See [`Scheme::Pkg`].
    Pkg(PkgRouter),
    /// See [`Scheme::DChoices`] and [`Scheme::WChoices`].
    HeadAware(HeadAwareRouter),
}

impl SchemeRouter {
    /// The most workers one key can reach through this router among
    /// `peers` now; for D-Choices, a head key's current d (a key with more
    /// than 1/n of the stream may reach every worker).
    pub fn key_spread(&self, peers: usize) -> usize {
        match self {
            SchemeRouter::Key(_) | SchemeRouter::Potc(_) => 1.min(peers),
            SchemeRouter::Shuffle(_) => peers,
            SchemeRouter::Pkg(_) => 2.min(peers),
            SchemeRouter::HeadAware(router) => router.head_choices(),
        }
    }
}

impl Router for SchemeRouter {
    #[inline]
    fn route(&mut self, key: u64, cost: u64) -> usize {
        match self {
            SchemeRouter::Key(router) => router.route(key, cost),
            SchemeRouter::Shuffle(router) => router.route(key, cost),
            SchemeRouter::Potc(router) => router.route(key, cost),
            SchemeRouter::Pkg(router) => router.route(key, cost),
            SchemeRouter::HeadAware(router) => router.route(key, cost),
        }
    }

    fn route_apart(&self) -> bool {
        match self {
            SchemeRouter::Key(router) => router.route_apart(),
            SchemeRouter::Shuffle(router) => router.route_apart(),
            SchemeRouter::Potc(router) => router.route_apart(),
            SchemeRouter::Pkg(router) => router.route_apart(),
            SchemeRouter::HeadAware(router) => router.route_apart(),
        }
    }

    fn route_each<X>(&mut self, records: impl Iterator<Item = (u64, u64, X)>, sink: impl FnMut(usize, X)) {
        match self {
            SchemeRouter::Key(router) => router.route_each(records, sink),
            SchemeRouter::Shuffle(router) => router.route_each(records, sink),
            SchemeRouter::Potc(router) => router.route_each(records, sink),
            SchemeRouter::Pkg(router) => router.route_each(records, sink),
            SchemeRouter::HeadAware(router) => router.route_each(records, sink),
        }
    }

    fn head_version(&self) -> u64 {
        match self {
            SchemeRouter::HeadAware(router) => router.head_version(),
            _ => 0,
        }
    }

    fn head(&self) -> (usize, Vec<HeadKey>) {
        match self {
            SchemeRouter::HeadAware(router) => router.head(),
            _ => (2, Vec::new()),
        }
    }
}

impl Grouping for Scheme {
    type Router = SchemeRouter;
    fn router(&self, peers: usize, sender: usize) -> SchemeRouter {
        self.with_slack(0).router(peers, sender)
    }
}

/// A [`Scheme`] with PKG's slack (see [`Pkg`]) for the schemes that split
/// keys by PKG (see [`Scheme::takes_slack`]); the others ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlackScheme {
    /// The scheme.
    pub scheme: Scheme,
    /// PKG's slack: for PKG, and for D-/W-Choices' tail keys.
    pub slack: u64,
}

impl Scheme {
    /// This scheme with PKG's slack `slack`.
    pub fn with_slack(self, slack: u64) -> SlackScheme {
        SlackScheme { scheme: self, slack }
    }
}

impl Grouping for SlackScheme {
    type Router = SchemeRouter;
    fn router(&self, peers: usize, sender: usize) -> SchemeRouter {
        let slack = self.slack;
        match self.scheme {
            Scheme::Key => SchemeRouter::Key(Key.router(peers, sender)),
            Scheme::Shuffle => SchemeRouter::Shuffle(Shuffle.router(peers, sender)),
            Scheme::Potc => SchemeRouter::Potc(Potc.router(peers, sender)),
            Scheme::Pkg => SchemeRouter::Pkg(Pkg::with_slack(slack).router(peers, sender)),
            Scheme::DChoices => SchemeRouter::HeadAware(HeadAware::d_choices().with_slack(slack).router(peers, sender)),
            Scheme::WChoices => SchemeRouter::HeadAware(HeadAware::w_choices().with_slack(slack).router(peers, sender)),
        }
    }
}
