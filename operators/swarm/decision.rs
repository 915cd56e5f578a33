//! When to rebalance: the paper's five-stage mechanism (Section 4.3.1) and a
//! simpler threshold policy. Both say what they decided and why.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::common::Error;

/// What the coordinator does this round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// Leave the plan as it is.
    DoNothing,
    /// The loaded workers shed load to the least loaded, by their offers.
    Rebalance,
}

impl Decision {
    fn flipped(self) -> Decision {
        match self {
            Decision::DoNothing => Decision::Rebalance,
            Decision::Rebalance => Decision::DoNothing,
        }
    }
}

/// The stages of the five-stage mechanism, left to right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Stage {
    /// Reaching it flips the decision and resets the pointer to `Start`.
    Flip,
    /// One step left of `Start`.
    Left,
    /// The initial stage.
    Start,
    /// One step right of `Start`.
    Right1,
    /// The rightmost stage (the pointer saturates here).
    Right2,
}

impl Stage {
    fn right(self) -> Stage {
        match self {
            Stage::Flip => Stage::Left,
            Stage::Left => Stage::Start,
            Stage::Start => Stage::Right1,
            Stage::Right1 | Stage::Right2 => Stage::Right2,
        }
    }

    fn left(self) -> Stage {
        match self {
            Stage::Flip | Stage::Left => Stage::Flip,
            Stage::Start => Stage::Left,
            Stage::Right1 => Stage::Start,
            Stage::Right2 => Stage::Right1,
        }
    }
}

/// What a policy sees at the end of a round.
#[derive(Debug, Clone, Copy)]
pub struct RoundSummary<'a> {
    /// R(S) per unit of time over the round.
    pub throughput: f64,
    /// C(m) of every worker.
    pub costs: &'a [f64],
}

/// A decision and its reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// What to do.
    pub decision: Decision,
    /// Why, in words.
    pub reason: String,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.decision, self.reason)
    }
}

/// A rule for deciding, each round, whether to rebalance.
pub trait DecisionPolicy {
    /// The policy's name in reports.
    fn name(&self) -> String;
    /// Decides for the round just ended.
    fn decide(&mut self, round: &RoundSummary<'_>) -> Verdict;
    /// Whether the policy's settings can be used (`swarm` refuses it otherwise).
    fn validate(&self) -> Result<(), Error> {
        Ok(())
    }
}

/// The paper's five-stage mechanism.
///
/// Each round the pointer moves right if throughput improved on the previous
/// round and left otherwise; reaching `Flip` flips the decision and resets
/// the pointer to `Start`. The current decision applies every round; after
/// `beta` equal decisions in a row the pointer is forced to `Flip`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FiveStage {
    stage: Stage,
    decision: Decision,
    beta: u32,
    repeats: u32,
    previous_throughput: f64,
}

impl FiveStage {
    /// Pointer at `Start`, previous decision `DoNothing`; `beta` at least 1.
    pub fn new(beta: u32) -> Self {
        FiveStage {
            stage: Stage::Start,
            decision: Decision::DoNothing,
            beta: beta.max(1),
            repeats: 0,
            previous_throughput: 0.0,
        }
    }

    /// Where the pointer is.
    pub fn stage(&self) -> Stage {
        self.stage
    }
}

impl Default for FiveStage {
    fn default() -> Self {
        FiveStage::new(20)
    }
}

impl DecisionPolicy for FiveStage {
    fn name(&self) -> String {
        format!("paper (five stages, beta {})", self.beta)
    }

    fn decide(&mut self, round: &RoundSummary<'_>) -> Verdict {
        let improved = round.throughput > self.previous_throughput;
        let from = self.stage;
        self.stage = if improved { from.right() } else { from.left() };
        let mut reason = format!(
            "throughput {:.1} {} {:.1}: pointer {:?} -> {:?}",
            round.throughput,
            if improved { ">" } else { "<=" },
            self.previous_throughput,
            from,
            self.stage
        );
        self.previous_throughput = round.throughput;
        if self.stage == Stage::Flip {
            self.decision = self.decision.flipped();
            self.stage = Stage::Start;
            self.repeats = 0;
            reason.push_str(", flip, pointer -> Start");
        }
        self.repeats += 1;
        if self.repeats > self.beta {
            self.decision = self.decision.flipped();
            self.stage = Stage::Start;
            self.repeats = 1;
            reason.push_str(&format!(
                ", {} equal decisions in a row: forced flip, pointer -> Start",
                self.beta
            ));
        }
        Verdict {
            decision: self.decision,
            reason,
        }
    }
}

/// Rebalance whenever the most loaded worker's cost exceeds `tau` times the
/// mean, or exceeds 1 + (τ − 1)/2 times it two rounds in a row on the same
/// worker (with no rebalancing in between). One round's imbalance under τ
/// is mostly noise, which moving state would chase; the same worker above
/// the lower bar twice is a drift, such as a hotspot moving into its
/// partitions, that noise rarely makes (measured in `bench/results/swarm.md`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    tau: f64,
    /// The busiest worker of the last round, if it was above the lower bar.
    drifting: Option<usize>,
}

impl Threshold {
    /// Rebalancing above `tau` (see [`DecisionPolicy::validate`] for what
    /// `swarm` accepts).
    pub fn new(tau: f64) -> Self {
        Threshold { tau, drifting: None }
    }

    /// τ.
    pub fn tau(&self) -> f64 {
        self.tau
    }

    /// The lower bar a drift must pass two rounds in a row.
    fn drift_bar(&self) -> f64 {
        1.0 + (self.tau - 1.0) / 2.0
    }
}

impl DecisionPolicy for Threshold {
    fn name(&self) -> String {
        format!("threshold (tau {})", self.tau)
    }

    fn validate(&self) -> Result<(), Error> {
        // Below 1 (or NaN) every round, balanced or not, would rebalance (or none would).
        if self.tau.is_finite() && self.tau >= 1.0 {
            Ok(())
        } else {
            Err(Error::invalid(
                "SWARM threshold tau",
                format!(
                    "{}: must be a number ≥ 1 (the max/mean cost to rebalance above)",
                    self.tau
                ),
            ))
        }
    }

    fn decide(&mut self, round: &RoundSummary<'_>) -> Verdict {
        // The busiest worker; ties go to the lowest index, so that equal
        // rounds name the same one.
        let busiest = (0..round.costs.len()).fold(None, |best: Option<usize>, i| match best {
            Some(b) if round.costs[b] >= round.costs[i] => Some(b),
            _ => Some(i),
        });
        let max = busiest.map_or(0.0, |b| round.costs[b]);
        let mean = round.costs.iter().sum::<f64>() / round.costs.len().max(1) as f64;
        let ratio = if mean > 0.0 { max / mean } else { 1.0 };
        let bar = self.drift_bar();
        let above_bar = ratio > bar;
        let drift = above_bar && busiest.is_some() && self.drifting == busiest;
        let (decision, reason) = if ratio > self.tau {
            (
                Decision::Rebalance,
                format!("max/mean cost {ratio:.3} > tau {}", self.tau),
            )
        } else if drift {
            let worker = busiest.expect("a drift has a busiest worker");
            let reason = format!("max/mean cost {ratio:.3} > {bar} on worker {worker} two rounds in a row");
            (Decision::Rebalance, reason)
        } else {
            (
                Decision::DoNothing,
                format!("max/mean cost {ratio:.3} <= tau {}", self.tau),
            )
        };
        // A rebalanced round starts the count again: the next round still
        // partly runs on the old plan.
        self.drifting = match decision {
            Decision::Rebalance => None,
            Decision::DoNothing => busiest.filter(|_| above_bar),
        };
        Verdict { decision, reason }
    }
}
