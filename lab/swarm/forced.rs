//! The forced schedule (`--policy forced:<seed>`): a random move, split,
//! merge, share or unshare every round, ordered on a control stream
//! ([`Swarm::swarm_controlled`](equipoise::swarm::Swarm::swarm_controlled)),
//! to put the migrations through every kind of change.

use equipoise::swarm::cost::CostModel;
use equipoise::swarm::plan::{random_change, PlanChange};
use equipoise::swarm::SwarmConfig;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;

use crate::common::Error;

/// A control stream of random plan changes drawn from `seed`, at most one
/// in each round that `records` reach (ordered on worker 0, at the
/// records' frontier), each valid for the plan as the changes before it
/// left it; it ends when `records` end.
pub fn forced_changes<'scope, R: Clone + 'static, M: CostModel>(
    records: &StreamVec<'scope, u64, R>,
    seed: u64,
    config: &SwarmConfig<M>,
) -> Result<StreamVec<'scope, u64, PlanChange>, Error> {
    let workers = records.scope().peers();
    let (mut plan, mut ids) = config.initial_plan(workers)?;
    let round = config.round_for(workers);
    let mut rng = SmallRng::seed_from_u64(seed);
    let orders = records.scope().index() == 0;
    Ok(records
        .clone()
        .unary_frontier::<CapacityContainerBuilder<Vec<PlanChange>>, _, _, _>(
            Pipeline,
            "ForcedChanges",
            move |capability, _| {
                let mut capability = orders.then_some(capability);
                let mut ordered_in: Option<u64> = None;
                move |(input, frontier), output| {
                    input.for_each(|_, _| {});
                    let Some(cap) = capability.as_mut() else { return };
                    let Some(&time) = frontier.frontier().first() else {
                        capability = None;
                        return;
                    };
                    cap.downgrade(&time);
                    if ordered_in.is_some_and(|ordered| ordered >= time / round) {
                        return;
                    }
                    ordered_in = Some(time / round);
                    if let Some(change) = random_change(&mut rng, &plan, workers, &mut ids) {
                        plan.apply(&change).expect("a random change applies to its plan");
                        output.session(&*cap).give(change);
                    }
                }
            },
        ))
}
