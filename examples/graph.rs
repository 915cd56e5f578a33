//! Differential's graph computations on a power-law graph: breadth-first
//! search, connected components or PageRank, each a loop (`iterate`) that
//! joins a node's value with its out-edges and reduces what arrives at
//! each destination. A hub's edges sit on one worker, and so does the
//! join's output of them; a popular destination's proposals all go to one
//! worker's reduce.
//!
//! Without `--skew`, differential's own: the edges arranged by source
//! outside the loop and entered (`arrange_by_key().enter(inner)`), joined
//! with `join_core`. With `--skew`, the edges are split by
//! `skew_arrange_by_key` outside the loop (a hub's edges dealt over
//! several workers), entered, and joined with the loop's values by
//! `SkewArranged::join_map` (the values copied to a hub's workers); each
//! worker sums its equal proposals (`skew_combine`) before the reduce.
//!
//! ```text
//! cargo run --release --example graph -- --algorithm bfs --nodes 262144 --edges 2097152 -w 2
//! cargo run --release --example graph -- --algorithm bfs --nodes 262144 --edges 2097152 -w 2 --skew
//! cargo run --release --example graph -- --algorithm pagerank --graph rmat --skew -w 4 --doctor doctor.json
//! ```
//!
//! The graph is loaded at epoch 0; each of `--rounds` later epochs inserts
//! `--changes` new edges and retracts as many of the first ones. The
//! output digest is the same with and without `--skew`, for any number of
//! workers and processes. Several processes: give each the same flags plus
//! `-n`, `-p` and `--hostfile`.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use differential_dataflow::input::InputSession;
use differential_dataflow::operators::iterate::Variable;
use differential_dataflow::operators::Iterate;
use differential_dataflow::{AsCollection, Hashable, VecCollection};
use equipoise::doctor::Spread;
use equipoise::skew::{Skew, SkewArrange, SkewArrangedByKey, SkewEvent, SkewReduce, LOG_NAME};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::digest::watch;
use equipoise_lab::common::doctor_args::DoctorArgs;
use equipoise_lab::common::driver::run_diagnosed;
use equipoise_lab::common::latency::LatencySummary;
use equipoise_lab::common::log_file::LogFile;
use equipoise_lab::common::program::write_report;
use equipoise_lab::common::Error;
use equipoise_lab::graph::{Graph, GraphKind, Node};
use serde::{Deserialize, Serialize};
use timely::dataflow::operators::vec::Filter;
use timely::dataflow::ProbeHandle;
use timely::order::Product;
use timely::worker::Worker;

/// A graph computation on a generated power-law graph.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// What to compute: `bfs` (each node's least hops from the roots),
    /// `cc` (each node's least node id it is connected to, edges both
    /// ways), `pagerank` (`--iterations` steps of surfers along edges).
    #[arg(long, value_enum, default_value_t = Algorithm::Bfs)]
    algorithm: Algorithm,
    /// The generator: `chung-lu` (endpoints Zipf(`--exponent`) over the
    /// nodes) or `rmat` (Graph500's R-MAT, the control).
    #[arg(long, value_enum, default_value_t = GraphKind::ChungLu)]
    graph: GraphKind,
    /// Nodes.
    #[arg(long, default_value_t = 1 << 16)]
    nodes: Node,
    /// Edges loaded at epoch 0, all distinct (a draw that repeats an edge
    /// is skipped).
    #[arg(long, default_value_t = 1 << 19)]
    edges: u64,
    /// Chung–Lu's Zipf exponent of the endpoint draws (1.0: degrees with
    /// a power-law exponent of about 2, as in follower graphs).
    #[arg(long, default_value_t = 1.0)]
    exponent: f64,
    /// BFS's roots: the sources of the first this many edges.
    #[arg(long, default_value_t = 4)]
    roots: u64,
    /// PageRank's steps.
    #[arg(long, default_value_t = 10)]
    iterations: u64,
    /// Epochs after the load, each inserting `--changes` new edges and
    /// retracting as many of the first.
    #[arg(long, default_value_t = 0)]
    rounds: u64,
    /// Edges inserted (and retracted) per round.
    #[arg(long, default_value_t = 1000)]
    changes: u64,
    /// Seed of the graph.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Split the hubs' edges (`skew_arrange_by_key`, joined by
    /// `SkewArranged::join_map`) and combine equal proposals before the
    /// reduce (`skew_combine`).
    #[arg(long)]
    skew: bool,
    /// With `--skew`: a key is split once it carries this share of a
    /// worker's mean load (`skew_arrange_by_key_with(Skew::default()
    /// .with_hot_share(..))`; without it, `skew_arrange_by_key()`'s 0.05).
    #[arg(long)]
    hot_share: Option<f64>,
    /// With `--skew`, the skew-proof operators' decisions (timely log
    /// events: the hot keys and their shares, the updates each worker sent
    /// to each), one JSON object a line (with several processes, process p
    /// writes FILE.p).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Write the JSON report to PATH (from the process hosting worker 0).
    #[arg(long, value_name = "PATH")]
    report: Option<PathBuf>,
    #[command(flatten)]
    doctor: DoctorArgs,
    /// No summary on stdout.
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Algorithm {
    Bfs,
    Cc,
    Pagerank,
}

type Edges<'s> = VecCollection<'s, u64, (Node, Node), isize>;

/// A worker's input of records `D`.
type Session<D> = InputSession<u64, D, isize>;

/// With `--skew`, the settings the edges are split by (`None`:
/// `skew_arrange_by_key()`'s own).
#[derive(Clone, Copy)]
struct Split(Option<Skew>);

impl Split {
    fn arrange(self, edges: Edges<'_>) -> SkewArrangedByKey<'_, u64, Node, Node, isize> {
        match self.0 {
            Some(skew) => edges.skew_arrange_by_key_with(skew),
            None => edges.skew_arrange_by_key(),
        }
    }
}

/// What one worker counts as the loop runs: the join's output produced
/// here, and the updates it sent to each worker's reduce.
#[derive(Clone)]
struct Counts {
    joined: Rc<Cell<u64>>,
    to_reduce: Rc<RefCell<Vec<u64>>>,
}

impl Counts {
    /// `joined`, each update counted as the join's output.
    fn joined<'s, T: timely::progress::Timestamp, D: differential_dataflow::Data>(
        &self,
        joined: VecCollection<'s, T, D, isize>,
    ) -> VecCollection<'s, T, D, isize> {
        let count = Rc::clone(&self.joined);
        joined.inspect_batch(move |_, updates| count.set(count.get() + updates.len() as u64))
    }

    /// `proposals`, each update counted as sent to the worker its key's
    /// reduce runs on (differential's exchange: the key's hash).
    fn to_reduce<
        's,
        T: timely::progress::Timestamp,
        K: Hashable<Output = u64> + differential_dataflow::Data,
        V: differential_dataflow::Data,
    >(
        &self,
        proposals: VecCollection<'s, T, (K, V), isize>,
    ) -> VecCollection<'s, T, (K, V), isize> {
        let sent = Rc::clone(&self.to_reduce);
        proposals.inspect_batch(move |_, updates| {
            let mut sent = sent.borrow_mut();
            let peers = sent.len() as u64;
            for ((key, _), _, _) in updates {
                sent[(key.hashed() % peers) as usize] += 1;
            }
        })
    }
}

/// Each node's least proposed value.
fn least<'s, T: timely::progress::Timestamp + differential_dataflow::lattice::Lattice + Ord>(
    proposals: VecCollection<'s, T, (Node, u32), isize>,
) -> VecCollection<'s, T, (Node, u32), isize> {
    proposals.reduce(|_, values, out| out.push((*values[0].0, 1)))
}

/// Each node's least value, from `init` (a node's own) and from every
/// in-neighbour's value passed by `step`, to a fixed point: BFS's hops
/// from the roots, or connected components' least reachable id.
fn least_values<'s>(
    edges: Edges<'s>,
    init: VecCollection<'s, u64, (Node, u32), isize>,
    step: fn(u32) -> u32,
    skew: Option<Split>,
    counts: &Counts,
) -> VecCollection<'s, u64, (Node, u32), isize> {
    let counts = counts.clone();
    if let Some(settings) = skew {
        let split = settings.arrange(edges);
        init.clone().iterate(|inner, values| {
            let proposals = split
                .enter(inner)
                .join_map(values, move |_, &dst, &value| (dst, step(value)));
            least(counts.to_reduce(counts.joined(proposals).concat(init.enter(inner)).skew_combine()))
        })
    } else {
        let arranged = edges.arrange_by_key_named("EdgesArranged");
        init.clone().iterate(|inner, values| {
            let proposals = values
                .arrange_by_key()
                .join_core(arranged.enter(inner), move |_, &value, &dst| Some((dst, step(value))));
            least(counts.to_reduce(counts.joined(proposals).concat(init.enter(inner))))
        })
    }
}

/// `iterations` steps of PageRank as differential's example runs it:
/// surfers are the multiplicities, each node keeps a sixth and passes the
/// rest along its out-edges evenly, and a reset adds surfers to every node.
fn pagerank<'s>(
    edges: Edges<'s>,
    iterations: u64,
    skew: Option<Split>,
    counts: &Counts,
) -> VecCollection<'s, u64, Node, isize> {
    let nodes = edges.clone().flat_map(|(src, dst)| [src, dst]).distinct();
    let degrees = edges.clone().map(|(src, _)| src).count();
    let outer = edges.inner.scope();
    let split = skew.map(|settings| settings.arrange(edges.clone()));
    let arranged = edges.arrange_by_key_named("EdgesArranged");
    let counts = counts.clone();
    outer.iterative::<u64, _, _>(|inner| {
        let nodes = nodes.enter(inner);
        let inits = nodes.clone().explode(|node| Some((node, 6_000_000)));
        let reset = nodes.explode(|node| Some((node, 1_000_000)));
        let (ranks_bind, ranks) = Variable::new_from(inits, Product::new(0, 1));
        let to_push = degrees
            .enter(inner)
            .semijoin(ranks)
            .threshold(|(_, degree), surfers| (5 * surfers) / (6 * *degree))
            .map(|(node, _)| (node, ()));
        let pushed = match split {
            Some(split) => split.enter(inner).join_map(to_push, |_, &dst, _| (dst, ())),
            None => to_push
                .arrange_by_key()
                .join_core(arranged.enter(inner), |_, _, &dst| Some((dst, ()))),
        };
        let pushed = counts.joined(pushed).concat(reset.map(|node| (node, ())));
        let pushed = if skew.is_some() { pushed.skew_combine() } else { pushed };
        let pushed = counts
            .to_reduce(pushed)
            .map(|(node, ())| node)
            .consolidate()
            .inner
            .filter(move |(_, time, _)| time.inner < iterations)
            .as_collection();
        ranks_bind.set(pushed.clone());
        pushed.leave(outer)
    })
}

/// What one worker saw.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WorkerFigures {
    digest: u64,
    load_s: f64,
    elapsed_s: f64,
    /// Each change round's latency, from its first update to the probe
    /// passing it.
    latencies_us: Vec<u64>,
    joined: u64,
    to_reduce: Vec<u64>,
}

/// The report: `--report`'s JSON.
#[derive(Debug, Serialize)]
struct Report {
    algorithm: Algorithm,
    graph: GraphKind,
    nodes: Node,
    edges: u64,
    exponent: f64,
    skew: bool,
    /// `--hot-share` (null: `skew_arrange_by_key()`'s).
    hot_share: Option<f64>,
    workers: usize,
    processes: usize,
    rounds: u64,
    changes: u64,
    /// Edges loaded, inserted and retracted, over all workers.
    updates: u64,
    /// Seconds until the loaded graph's result was complete.
    load_s: f64,
    elapsed_s: f64,
    updates_per_s: f64,
    /// Each change round's latency.
    change_latency_ms: LatencySummary,
    /// Wrapping sum, over every output update (record, time, diff), of
    /// diff × splitmix64(key_hash((record, time))): the same with and
    /// without `--skew`, for any workers and processes.
    digest: u64,
    /// The loop's join output produced on each worker, over every
    /// iteration.
    join_output: Vec<u64>,
    /// The updates each worker's reduce received (in PageRank, the
    /// consolidation that sums the surfers), over every iteration.
    reduce_input: Vec<u64>,
    /// The busiest worker's join output ÷ the mean.
    join_output_over_mean: f64,
    /// The busiest worker's reduce input ÷ the mean.
    reduce_input_over_mean: f64,
}

fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    equipoise_lab::common::program::exit_code("graph", run(Args::parse()))
}

/// The busiest of `counts` ÷ their mean (1 for none).
fn over_mean(counts: &[u64]) -> f64 {
    let counts: Vec<f64> = counts.iter().map(|&count| count as f64).collect();
    Spread::of(&counts).busiest_over_mean
}

/// The settings every process must share, checked.
fn validate(args: &Args) -> Result<ClusterArgs, Error> {
    if args.edges == 0 {
        return Err(Error::invalid("--edges", "0: must be at least 1"));
    }
    if args.rounds.saturating_mul(args.changes) > args.edges {
        return Err(Error::invalid(
            "--rounds",
            format!(
                "{} rounds of {} changes retract more than the {} edges loaded",
                args.rounds, args.changes, args.edges
            ),
        ));
    }
    let mut cluster = args.cluster.clone();
    cluster.agree("--algorithm", args.algorithm);
    cluster.agree("--graph", args.graph);
    cluster.agree("--nodes", args.nodes);
    cluster.agree("--edges", args.edges);
    cluster.agree("--exponent", args.exponent);
    cluster.agree("--roots", args.roots);
    cluster.agree("--iterations", args.iterations);
    cluster.agree("--rounds", args.rounds);
    cluster.agree("--changes", args.changes);
    cluster.agree("--seed", args.seed);
    cluster.agree("--skew", args.skew);
    cluster.agree("--hot-share", args.hot_share);
    Ok(cluster)
}

/// The dataflow of `args` on this worker, with its edge and root inputs.
fn build(
    worker: &mut Worker,
    algorithm: Algorithm,
    iterations: u64,
    skew: Option<Split>,
    counts: &Counts,
    digest: &Rc<Cell<u64>>,
    probe: &ProbeHandle<u64>,
) -> (Session<(Node, Node)>, Session<Node>) {
    let mut edge_input = InputSession::new();
    let mut root_input = InputSession::new();
    worker.dataflow::<u64, _, _>(|scope| {
        let edges = edge_input.to_collection(scope);
        match algorithm {
            Algorithm::Bfs => {
                let roots = root_input.to_collection(scope).map(|root| (root, 0));
                watch(least_values(edges, roots, |hops| hops + 1, skew, counts), digest, probe);
            }
            Algorithm::Cc => {
                let both = edges.clone().concat(edges.map(|(src, dst)| (dst, src)));
                let own = both.clone().map(|(node, _)| (node, node)).distinct();
                watch(least_values(both, own, |label| label, skew, counts), digest, probe);
            }
            Algorithm::Pagerank => watch(pagerank(edges, iterations, skew, counts), digest, probe),
        }
    });
    (edge_input, root_input)
}

/// Steps `worker` until `probe` has passed `epoch`.
fn settle(worker: &mut Worker, probe: &ProbeHandle<u64>, epoch: u64) {
    while probe.less_equal(&epoch) {
        worker.step_or_park(None);
    }
}

fn run(args: Args) -> Result<(), Error> {
    let cluster = validate(&args)?;
    // Drawn once per process, before any clock starts.
    let graph = Graph::new(args.graph, args.nodes, args.exponent, args.seed)?;
    let drawn = Arc::new(graph.distinct_edges(args.edges + args.rounds * args.changes)?);
    let split = args
        .hot_share
        .map(|share| Skew::default().with_hot_share(share))
        .transpose()
        .map_err(|error| Error::invalid("--hot-share", error.to_string()))?;
    let (algorithm, iterations, skew, edges, roots, rounds, changes) = (
        args.algorithm,
        args.iterations,
        args.skew.then_some(Split(split)),
        args.edges,
        args.roots,
        args.rounds,
        args.changes,
    );
    let log = LogFile::for_flag(args.log.as_deref(), &cluster)?;
    let job = move |worker: &mut Worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        // Before the dataflow is built: the operators look their logger up then.
        if let Some(log) = &log {
            log.register::<SkewEvent>(worker, LOG_NAME);
        }
        let counts = Counts {
            joined: Rc::new(Cell::new(0)),
            to_reduce: Rc::new(RefCell::new(vec![0; peers as usize])),
        };
        let (digest, probe) = (Rc::new(Cell::new(0u64)), ProbeHandle::new());
        let (mut edge_input, mut root_input) = build(worker, algorithm, iterations, skew, &counts, &digest, &probe);
        // This worker's share of the drawn edges: every peers-th.
        let mine = |from: u64, to: u64| -> Vec<(Node, Node)> {
            drawn[from as usize..to as usize]
                .iter()
                .skip(index as usize)
                .step_by(peers as usize)
                .copied()
                .collect()
        };
        let loaded = mine(0, edges);
        // Round r inserts edges `edges + (r - 1) × changes ..` and retracts
        // edges `(r - 1) × changes ..`, `changes` of each.
        let changed: Vec<_> = (0..rounds)
            .map(|round| {
                let (added, retracted) = (edges + round * changes, round * changes);
                (mine(added, added + changes), mine(retracted, retracted + changes))
            })
            .collect();
        let start = Instant::now();
        for edge in loaded {
            edge_input.insert(edge);
        }
        if index == 0 {
            drawn
                .iter()
                .take(roots as usize)
                .for_each(|&(root, _)| root_input.insert(root));
        }
        root_input.close();
        edge_input.advance_to(1);
        edge_input.flush();
        settle(worker, &probe, 0);
        let load_s = start.elapsed().as_secs_f64();
        let mut latencies_us = Vec::new();
        for (round, (added, retracted)) in (1..).zip(changed) {
            let began = Instant::now();
            added.into_iter().for_each(|edge| edge_input.insert(edge));
            retracted.into_iter().for_each(|edge| edge_input.remove(edge));
            edge_input.advance_to(round + 1);
            edge_input.flush();
            settle(worker, &probe, round);
            latencies_us.push(began.elapsed().as_micros() as u64);
        }
        drop(edge_input);
        while !probe.done() {
            worker.step_or_park(None);
        }
        let to_reduce = counts.to_reduce.borrow().clone();
        WorkerFigures {
            digest: digest.get(),
            load_s,
            elapsed_s: start.elapsed().as_secs_f64(),
            latencies_us,
            joined: counts.joined.get(),
            to_reduce,
        }
    };
    let processes = cluster.processes;
    let workers = cluster.total_workers();
    let (graph_kind, nodes, exponent, hot_share) = (args.graph, args.nodes, args.exponent, args.hot_share);
    let assemble = move |figures: Vec<WorkerFigures>| {
        let elapsed_s = figures.iter().map(|f| f.elapsed_s).fold(0.0, f64::max);
        let latencies: Vec<u64> = figures.iter().flat_map(|f| f.latencies_us.iter().copied()).collect();
        let join_output: Vec<u64> = figures.iter().map(|f| f.joined).collect();
        let mut reduce_input = vec![0; figures.len()];
        for sent in figures.iter().map(|f| &f.to_reduce) {
            reduce_input
                .iter_mut()
                .zip(sent)
                .for_each(|(total, sent)| *total += sent);
        }
        let updates = edges + 2 * rounds * changes;
        Report {
            algorithm,
            graph: graph_kind,
            nodes,
            edges,
            exponent,
            skew: skew.is_some(),
            hot_share,
            workers,
            processes,
            rounds,
            changes,
            updates,
            load_s: figures.iter().map(|f| f.load_s).fold(0.0, f64::max),
            elapsed_s,
            updates_per_s: updates as f64 / elapsed_s.max(f64::MIN_POSITIVE),
            change_latency_ms: LatencySummary::from_micros(&latencies),
            digest: figures.iter().fold(0u64, |sum, f| sum.wrapping_add(f.digest)),
            join_output_over_mean: over_mean(&join_output),
            reduce_input_over_mean: over_mean(&reduce_input),
            join_output,
            reduce_input,
        }
    };
    let diagnose = args.doctor.settings()?;
    if let Some((report, diagnosed)) = run_diagnosed(&cluster, diagnose, job, assemble)? {
        if !args.quiet {
            println!(
                "{:?}{} on {} {} ({} nodes, {} edges) with {} workers in {} process{}: loaded in {:.2} s, {:.2} s in all ({:.0} updates/s), change p50 {:.1} ms; join output busiest/mean {:.2}, reduce input {:.2}; digest {}",
                report.algorithm,
                if report.skew { " --skew" } else { "" },
                report.graph,
                if report.graph == GraphKind::ChungLu { format!("{}", report.exponent) } else { String::new() },
                report.nodes,
                report.edges,
                report.workers,
                report.processes,
                if report.processes == 1 { "" } else { "es" },
                report.load_s,
                report.elapsed_s,
                report.updates_per_s,
                report.change_latency_ms.p50,
                report.join_output_over_mean,
                report.reduce_input_over_mean,
                report.digest
            );
        }
        if let Some(path) = &args.report {
            write_report(path, &report)?;
        }
        args.doctor.write(diagnosed.as_ref())?;
    }
    Ok(())
}
