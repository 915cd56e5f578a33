//! The cost model (ours: the paper's Eqns 1–7 are not in our text; see
//! `bench/results/swarm.md`, "What is ours"), behind a trait so applications can supply
//! their own: [`CostModel`], with [`RangeQueryCost`] for range queries and
//! [`TextualCost`] for spatio-textual ones, and a worker's load by it
//! ([`WorkerLoad`]).

use serde::{Deserialize, Serialize};

use super::stats::Totals;

/// How much work a partition causes in a round, from its statistics.
pub trait CostModel {
    /// Num(C(p)): the work a partition with these figures caused this round.
    fn work(&self, totals: &Totals) -> f64;

    /// R(p): the objects the partition received this round.
    fn received(&self, totals: &Totals) -> f64 {
        totals.rn + totals.rq
    }

    /// The work of keeping one partition for a round (its statistics, its
    /// share of planning and routing), in the units of [`work`](Self::work):
    /// a split must save more than this to pay.
    fn upkeep(&self) -> f64 {
        0.0
    }

    /// Whether splitting a partition can cut its work under this model. A
    /// model whose work adds up over the parts (queries that span both
    /// counted in each) says no, and the workers then skip looking for such
    /// splits every round: a round that changes nothing stays cheap however
    /// many partitions a worker holds.
    fn splits_can_save(&self) -> bool {
        true
    }
}

/// Continuous range queries: the point–query checks the partition's
/// application made in the round (each point meets the queries of its own
/// cell), plus a handling cost α per new object:
/// Num(C(p)) = RC + α·(RN + RQ); keeping a partition for a round costs
/// `upkeep` checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RangeQueryCost {
    /// Cost of handling one new object, in point–query checks.
    pub alpha: f64,
    /// Cost of keeping one partition for a round, in point–query checks.
    pub upkeep: f64,
}

impl Default for RangeQueryCost {
    fn default() -> Self {
        RangeQueryCost {
            alpha: 1.0,
            upkeep: 32.0,
        }
    }
}

impl CostModel for RangeQueryCost {
    fn work(&self, t: &Totals) -> f64 {
        t.rc + self.alpha * (t.rn + t.rq)
    }

    fn upkeep(&self) -> f64 {
        self.upkeep
    }

    /// The checks and objects of the parts add up to the whole's, and a
    /// query spanning both parts counts in each: no split saves work.
    fn splits_can_save(&self) -> bool {
        false
    }
}

/// The two numbers a worker sends the coordinator each round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerLoad {
    /// Num(C(m)): the work of all the worker's partitions.
    pub work: f64,
    /// R(m): the objects all the worker's partitions received.
    pub received: f64,
}

impl WorkerLoad {
    /// The load of a worker holding partitions with these figures.
    pub fn of<'a>(model: &dyn CostModel, partitions: impl IntoIterator<Item = &'a Totals>) -> Self {
        partitions
            .into_iter()
            .fold(WorkerLoad::default(), |load, totals| WorkerLoad {
                work: load.work + model.work(totals),
                received: load.received + model.received(totals),
            })
    }
}

/// R(S): the objects the whole system received this round (Eqn 4).
pub fn system_received(loads: &[WorkerLoad]) -> f64 {
    loads.iter().map(|load| load.received).sum()
}

/// C(x) = Num(C(x)) / R(S): work per object entering the system (0 when
/// nothing entered).
pub fn normalized(work: f64, system_received: f64) -> f64 {
    if system_received > 0.0 {
        work / system_received
    } else {
        0.0
    }
}

/// The cost of spatio-textual queries: a new point is checked only against
/// the share of the partition's queries its keywords retrieve, plus a
/// handling cost α per new object: Num(C(p)) = share·RN·Q + α·(RN + RQ);
/// keeping a partition for a round costs `upkeep` checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TextualCost {
    /// The share of a partition's queries a point's keywords retrieve (for
    /// k keywords per point drawn evenly from a vocabulary of V, about k/V).
    pub share: f64,
    /// Cost of handling one new object, in checks.
    pub alpha: f64,
    /// Cost of keeping one partition for a round, in checks.
    pub upkeep: f64,
}

impl Default for TextualCost {
    fn default() -> Self {
        TextualCost {
            share: 0.1,
            alpha: 1.0,
            upkeep: 32.0,
        }
    }
}

impl CostModel for TextualCost {
    fn work(&self, t: &Totals) -> f64 {
        self.share * t.rn * t.q + self.alpha * (t.rn + t.rq)
    }

    fn upkeep(&self) -> f64 {
        self.upkeep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_query_cost_counts_checks_and_handling() {
        let model = RangeQueryCost::default();
        let t = Totals {
            n: 10.0,
            q: 3.0,
            rn: 4.0,
            rq: 1.0,
            c: 30.0,
            rc: 22.0,
        };
        assert_eq!(model.work(&t), 22.0 + 5.0);
        assert_eq!(model.received(&t), 5.0);
        let load = WorkerLoad::of(&model, [&t, &t]);
        assert_eq!(
            load,
            WorkerLoad {
                work: 54.0,
                received: 10.0
            }
        );
        assert_eq!(system_received(&[load, load]), 20.0);
        assert_eq!(normalized(54.0, 20.0), 2.7);
        assert_eq!(normalized(54.0, 0.0), 0.0);
    }
}
