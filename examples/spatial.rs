//! Continuous range queries (or spatio-textual ones, `--app textual`) over a
//! point stream, balanced by SWARM or on a static grid.
//!
//! ```text
//! cargo run --release --example spatial -- --policy swarm --workload hotspot \
//!     --points 200000 --queries 2000 -w 4 --report swarm.json
//! cargo run --release --example spatial -- --policy static:16 --input points.csv --bounds -180,-90,180,90
//! ```
//!
//! Each worker builds the dataflow in `worker` below: an input of records,
//! SWARM on it, and an operator of its own that counts each query's matches
//! per epoch from SWARM's output stream (and sums their digests, which the
//! report checks against other runs).
//!
//! Input lines (CSV): `p,<id>,<x>,<y>` a point; `q,<id>,<x1>,<y1>,<x2>,<y2>`
//! register a continuous range query; `r,<id>` remove it; `#` comments and
//! blank lines are skipped. The epoch of a line is its index divided by
//! `--batch`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::rc::Rc;

use clap::Parser;
use equipoise::doctor::{self, Report};
use equipoise::swarm::{Match, PartitionState, RangeQueries, SpatioTextual, Swarm};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::driver::run_diagnosed;
use equipoise_lab::common::program::write_report;
use equipoise_lab::common::Error;
use equipoise_lab::swarm::cli::{SpatialArgs, SpatialRun};
use equipoise_lab::swarm::forced::forced_changes;
use equipoise_lab::swarm::job::{SpatialJob, SpatialReport, WorkerFigures};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::{Capability, Input, Operator, Probe};
use timely::dataflow::InputHandle;
use timely::worker::Worker;

/// Continuous range queries over a point stream, balanced by SWARM.
fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    equipoise_lab::common::program::exit_code("spatial", main_with(SpatialArgs::parse()))
}

fn main_with(args: SpatialArgs) -> Result<(), Error> {
    let diagnose = args.doctor.settings()?;
    let report = match args.run()? {
        (SpatialRun::Range(job), cluster) => run_app::<RangeQueries>(job, &cluster, diagnose)?,
        (SpatialRun::Textual(job), cluster) => run_app::<SpatioTextual>(job, &cluster, diagnose)?,
    };
    if let Some((report, diagnosed)) = report {
        print!("{report}");
        if let Some(path) = &args.report {
            write_report(path, &report)?;
        }
        args.doctor.write(diagnosed.as_ref())?;
    }
    Ok(())
}

/// Runs the job on every worker of the cluster; the report (and the skew
/// report if `diagnose`) in the process hosting worker 0.
fn run_app<S>(
    job: SpatialJob<S::Point, S::Query>,
    cluster: &ClusterArgs,
    diagnose: Option<doctor::Settings>,
) -> Result<Option<(SpatialReport, Option<Report>)>, Error>
where
    S: PartitionState<Output = Match>,
    S::Point: Sync,
    S::Query: Sync,
{
    job.check(cluster)?;
    let (shared, processes) = (job.clone(), cluster.processes);
    run_diagnosed(
        cluster,
        diagnose,
        move |worker| self::worker::<S>(worker, &shared),
        move |figures| job.assemble(processes, figures),
    )
}

/// An open epoch of the matches: its capability, the query of each match
/// (counted once the epoch is complete: sorting them costs less than a
/// hash map's update per match), and the wrapping sum of their digests.
type Epoch = (Capability<u64>, Vec<u64>, u64);

/// One worker: the dataflow, then the epochs of its share of the records.
fn worker<S>(worker: &mut Worker, job: &SpatialJob<S::Point, S::Query>) -> WorkerFigures
where
    S: PartitionState<Output = Match>,
{
    // `--log FILE`: the coordinator's decisions, from timely's logging.
    job.log_to(worker);
    let mut input = InputHandle::new();
    let config = job.config();
    // Matches and the wrapping sum of their digests, over finished epochs.
    let totals = Rc::new(RefCell::new((0u64, 0u64)));
    let sink = Rc::clone(&totals);
    let (handles, probe) = worker.dataflow::<u64, _, _>(|scope| {
        let records = scope.input_from(&mut input);
        // `--policy forced:<seed>`: random changes on a control stream
        // instead of SWARM's coordinator.
        let (matches, handles) = match job.forced() {
            Some(seed) => {
                let control = forced_changes(&records, seed, &config).expect("checked by job.check");
                records.swarm_controlled::<S>(&config, control)
            }
            None => records.swarm::<S>(&config, job.policy()),
        }
        .expect("checked by job.check");
        // Per epoch: each query's matches, and the epoch's digest, emitted
        // once SWARM's output has passed the epoch.
        let per_query = matches.unary_frontier::<CapacityContainerBuilder<Vec<(u64, u64)>>, _, _, _>(
            Pipeline,
            "MatchesPerQuery",
            |_, _| {
                let mut epochs: BTreeMap<u64, Epoch> = BTreeMap::new();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some(cap) = cap.retain_least(0) else { return };
                        let (_, queries, digest) = epochs.entry(*cap.time()).or_insert_with(|| (cap, Vec::new(), 0));
                        for m in batches.flat_map(|batch| batch.drain(..)) {
                            queries.push(m.query);
                            *digest = digest.wrapping_add(m.digest());
                        }
                    });
                    while let Some(entry) = epochs.first_entry() {
                        if frontier.less_equal(entry.key()) {
                            break;
                        }
                        let (cap, mut queries, digest) = entry.remove();
                        let mut sink = sink.borrow_mut();
                        *sink = (sink.0 + queries.len() as u64, sink.1.wrapping_add(digest));
                        queries.sort_unstable();
                        let counts = queries.chunk_by(|a, b| a == b).map(|run| (run[0], run.len() as u64));
                        output.session(&cap).give_iterator(counts);
                    }
                }
            },
        );
        (handles, per_query.probe().0)
    });
    let times = job.feed(worker, input, &probe, &handles);
    let totals = *totals.borrow();
    WorkerFigures::of(&handles, totals, times)
}
