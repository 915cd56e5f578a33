//! The skew-proof operators inside differential's `iterate`, against
//! differential's own: a breadth-first search whose edges are split by
//! `skew_arrange_by_key` outside the loop and joined with the distances
//! inside it, on random graphs with hub vertices whose edges change across
//! outer times, at 1 to 4 workers. The join's output is compared at every
//! (outer, iteration) time inside the loop, as are `skew_count`,
//! `skew_distinct` and `skew_combine` of the distances; the distances
//! leaving the loop must equal differential's.

use std::sync::{Arc, Mutex};

use differential_dataflow::input::InputSession;
use differential_dataflow::operators::Iterate;
use differential_dataflow::VecCollection;
use equipoise::skew::{Skew, SkewArrange, SkewEvent, SkewEventBuilder, SkewReduce, LOG_NAME};
use proptest::prelude::*;

mod support;
use support::feed::feed_in_turns;

type Node = u32;
/// Updates of edges as ((source, destination), time, diff).
type Edges = Vec<((Node, Node), u64, isize)>;

/// What a run found: updates where the two computations differ (should be
/// none), the join updates differential's own produced inside the loop
/// (so that the comparison is not vacuous), and the most workers any key
/// was dealt over.
#[derive(Debug, Default, Clone, Copy)]
struct Found {
    mismatched: usize,
    joined: usize,
    widest_deal: usize,
}

/// Counts each update of `difference` (consolidated: a difference between
/// two computations at some (outer, iteration) time) as a mismatch.
fn expect_empty<'s, T, D>(difference: VecCollection<'s, T, D, isize>, found: &Arc<Mutex<Found>>, what: &'static str)
where
    T: timely::progress::Timestamp + differential_dataflow::lattice::Lattice + Ord,
    D: differential_dataflow::ExchangeData + std::hash::Hash,
{
    let found = Arc::clone(found);
    difference.consolidate().inspect(move |update| {
        eprintln!("{what} mismatch: {update:?}");
        found.lock().unwrap().mismatched += 1;
    });
}

/// Roots are fed with the edges, as edges from this node.
const ROOT: Node = Node::MAX;

/// The fed edges, at outer times.
type EdgeSet<'s> = VecCollection<'s, u64, (Node, Node), isize>;

/// Nodes with their distances, at outer times.
type Dists<'s> = VecCollection<'s, u64, (Node, u32), isize>;

/// The fed input's edges, and its roots (edges from `ROOT`) at distance 0.
fn edges_and_roots(all: EdgeSet<'_>) -> (EdgeSet<'_>, Dists<'_>) {
    let edges = all.clone().filter(|&(src, _)| src != ROOT);
    let roots = all.filter(|&(src, _)| src == ROOT).map(|(_, node)| (node, 0u32));
    (edges, roots)
}

/// Runs breadth-first search over `edges` (an edge from [`ROOT`] makes its
/// destination a root) both ways on `workers` workers.
fn run(workers: usize, edges: Edges, skew: Skew) -> Found {
    let found = Arc::new(Mutex::new(Found::default()));
    let found2 = Arc::clone(&found);
    let edges = Arc::new(edges);
    timely::execute(timely::Config::process(workers), move |worker| {
        let deals = Arc::clone(&found2);
        worker
            .log_register()
            .expect("a registry")
            .insert::<SkewEventBuilder, _>(LOG_NAME, move |_, events| {
                for (_, event) in events.iter().flatten() {
                    if let SkewEvent::Hot { workers, .. } = event {
                        let mut found = deals.lock().unwrap();
                        found.widest_deal = found.widest_deal.max(workers.len());
                    }
                }
            });
        let mut input = InputSession::<u64, (Node, Node), isize>::new();
        let found = Arc::clone(&found2);
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let (edges, roots) = edges_and_roots(input.to_collection(scope));
            let split = edges.clone().skew_arrange_by_key_with(skew);
            let (start, inner_found) = (roots.clone(), Arc::clone(&found));
            let dists = roots.clone().iterate(|inner, dists| {
                let theirs = dists
                    .clone()
                    .join_map(edges.clone().enter(inner), |_, &dist, &dst| (dst, dist + 1));
                let ours = split
                    .enter(inner)
                    .join_map(dists.clone(), |_, &dst, &dist| (dst, dist + 1));
                let joined = Arc::clone(&inner_found);
                let theirs = theirs.inspect(move |_| joined.lock().unwrap().joined += 1);
                expect_empty(ours.clone().negate().concat(theirs), &inner_found, "join");
                // The combining count and distinct, and the combiner, at
                // partially ordered times.
                let levels = dists.map(|(_, dist)| dist % 3);
                let counted = levels.clone().skew_count().negate().concat(levels.clone().count());
                expect_empty(counted, &inner_found, "skew_count");
                let distinct = levels.clone().skew_distinct().negate().concat(levels.distinct());
                expect_empty(distinct, &inner_found, "skew_distinct");
                let proposals = ours.concat(start.enter(inner));
                let combined = proposals.clone().skew_combine().negate().concat(proposals.clone());
                expect_empty(combined, &inner_found, "skew_combine");
                proposals
                    .skew_combine()
                    .reduce(|_, dists, out| out.push((*dists[0].0, 1)))
            });
            let expected = roots.clone().iterate(|inner, dists| {
                dists
                    .join_map(edges.enter(inner), |_, &dist, &dst| (dst, dist + 1))
                    .concat(roots.enter(inner))
                    .reduce(|_, dists, out| out.push((*dists[0].0, 1)))
            });
            let (probe, _) = dists
                .negate()
                .concat(expected)
                .consolidate()
                .inspect(move |update| {
                    eprintln!("mismatch leaving the loop: {update:?}");
                    found.lock().unwrap().mismatched += 1;
                })
                .probe();
            probe
        });
        feed_in_turns(worker, vec![(input, &edges[..])], &probe);
    })
    .expect("timely runs");
    found.lock().map(|found| *found).unwrap()
}

/// A graph of `nodes` nodes whose hub at outer time t is `hubs[t]`: each
/// time adds `per_time` edges, two in three from that time's hub, and
/// retracts every `retract_every`-th a time or two later; roots 0 and 1
/// from the start, and `nodes - 1` for times 1 and 2.
fn hubbed(nodes: Node, hubs: &[Node], per_time: usize, retract_every: usize) -> Edges {
    let mut edges: Edges = vec![
        ((ROOT, 0), 0, 1),
        ((ROOT, 1), 0, 1),
        ((ROOT, nodes - 1), 1, 1),
        ((ROOT, nodes - 1), 3, -1),
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |below: Node| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % u64::from(below)) as Node
    };
    for (time, &hub) in hubs.iter().enumerate() {
        let time = time as u64;
        for i in 0..per_time {
            let src = if i % 3 == 0 { next(nodes) } else { hub };
            let edge = (src, next(nodes));
            edges.push((edge, time, 1));
            if i % retract_every == 0 {
                edges.push((edge, time + 1 + (i % 2) as u64, -1));
            }
        }
    }
    edges
}

#[test]
fn a_hub_split_outside_the_loop_joins_inside_it_as_join_does() {
    let edges = hubbed(200, &[0, 0, 5, 5, 9, 0], 400, 4);
    let skew = Skew::default().with_min_updates(1).unwrap();
    for workers in 1..=4 {
        let found = run(workers, edges.clone(), skew);
        assert_eq!(found.mismatched, 0, "{workers} workers: {found:?}");
        assert!(found.joined > 1000, "{found:?}");
        // The hubs were dealt over several workers (none on one worker).
        assert_eq!(found.widest_deal > 1, workers > 1, "{workers} workers: {found:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_graphs_with_hubs_search_as_differential_does(
        workers in 1usize..=4,
        nodes in 8u32..300,
        hubs in prop::collection::vec(0u32..8, 1..6),
        per_time in 1usize..300,
        retract_every in 1usize..6,
        extra in prop::collection::vec((0u32..8, 0u32..8, 0u64..6, prop_oneof![Just(1isize), Just(-1)]), 0..20),
        hot_share in prop_oneof![Just(0.05f64), Just(0.5), Just(1.0)],
        tolerance in prop_oneof![Just(0.0f64), Just(0.05)],
    ) {
        let mut edges = hubbed(nodes, &hubs, per_time, retract_every);
        edges.extend(extra.into_iter().map(|(src, dst, at, diff)| ((src, dst), at, diff)));
        let skew = Skew::default()
            .with_min_updates(1)
            .unwrap()
            .with_hot_share(hot_share)
            .unwrap()
            .with_tolerance(tolerance)
            .unwrap();
        prop_assert_eq!(run(workers, edges, skew).mismatched, 0);
    }
}

#[test]
fn one_split_arrangement_serves_joins_outside_and_inside_the_loop() {
    // The same split edges joined outside the loop (`join`), inside it
    // (`join_core` with the values arranged once), and entered twice.
    let edges = hubbed(300, &[0, 3, 3, 7], 500, 3);
    for workers in [1, 3] {
        let found = Arc::new(Mutex::new(Found::default()));
        let (found2, edges) = (Arc::clone(&found), Arc::new(edges.clone()));
        timely::execute(timely::Config::process(workers), move |worker| {
            let mut input = InputSession::<u64, (Node, Node), isize>::new();
            let found = Arc::clone(&found2);
            let probe = worker.dataflow::<u64, _, _>(|scope| {
                let (edges, roots) = edges_and_roots(input.to_collection(scope));
                let split = edges.clone().skew_arrange_by_key();
                // Outside: each edge with its source's out-degree.
                let degrees = edges.clone().map(|(src, _)| src).count();
                let ours = split.clone().join(degrees.clone());
                expect_empty(
                    ours.negate().concat(edges.clone().join(degrees)),
                    &found,
                    "join outside",
                );
                let (inner_found, inner_split) = (Arc::clone(&found), split.clone());
                let start = roots.clone();
                let reached = roots.iterate(|inner, dists| {
                    let dists = dists.arrange_by_key();
                    let first = inner_split
                        .clone()
                        .enter(inner)
                        .join_core(dists.clone(), |_, &dst, &dist| Some((dst, dist + 1)));
                    let second = inner_split
                        .enter(inner)
                        .join_core(dists, |_, &dst, &dist| Some((dst, dist + 1)));
                    expect_empty(first.clone().negate().concat(second), &inner_found, "two joins");
                    first
                        .concat(start.enter(inner))
                        .reduce(|_, dists, out| out.push((*dists[0].0, 1)))
                });
                let (probe, _) = reached.probe();
                probe
            });
            feed_in_turns(worker, vec![(input, &edges[..])], &probe);
        })
        .expect("timely runs");
        assert_eq!(found.lock().unwrap().mismatched, 0, "{workers} workers");
    }
}
