//! PI-controlled load shedding on a dataflow whose input outruns it.
//!
//! ```text
//! cargo run --release --example shedding -- run --controller pi --profile ramp:20000:150000:2:8 \
//!     --cost-us 20 --target-ms 300 --duration-s 10 -w 2 --trace pi.csv --plot pi.svg --report pi.json
//! cargo run --release --example shedding -- identify --cost-us 20 -w 2 --save pi.json
//! ```
//!
//! Each worker builds the dataflow in `worker` below: an input of records
//! stamped with their arrival millisecond, the shedding loop on it, and a
//! processing stage that spends each record's cost. The loop watches the
//! frontier at the end of the dataflow (the probe `output`): that is the
//! delay it holds under the target. Arrivals at the profile's rate, the
//! cost, and the figures of the report come from the lab's `ShedJob`.

use std::process::ExitCode;

use clap::Parser;
use equipoise::common::hash::splitmix64;
use equipoise::shed::{ShedLoop, TimeSliced};
use equipoise_lab::common::Error;
use equipoise_lab::shed::cli::{RunArgs, ShedArgs, ShedCommand};
use equipoise_lab::shed::job::{run_shedding_with, Record, ShedJob, WorkerFigures, PROCESSING_SLICE};
use timely::dataflow::operators::{Exchange, Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    let result = match ShedArgs::parse().command {
        ShedCommand::Run(args) => run(*args),
        ShedCommand::Identify(args) => args.run(),
    };
    equipoise_lab::common::program::exit_code("shedding", result)
}

/// Runs the dataflow on every worker of the cluster; the process hosting
/// worker 0 prints the summary and writes the report.
fn run(args: RunArgs) -> Result<(), Error> {
    let (job, cluster) = args.job()?;
    // `--doctor PATH`: the skew report of the dataflow below.
    if let Some((report, diagnosed)) = run_shedding_with(job, &cluster, args.doctor.settings()?, worker)? {
        print!("{report}");
        args.write(&report)?;
        args.doctor.write(diagnosed.as_ref())?;
    }
    Ok(())
}

/// One worker: the dataflow, then the arrivals of its share of the profile.
fn worker(worker: &mut Worker, job: &ShedJob) -> WorkerFigures {
    // `--log FILE`: the loop's decisions, from timely's logging.
    job.log_to(worker);
    let testbed = job.testbed();
    let mut input = InputHandle::new();
    // The end of the dataflow, whose frontier the loop measures.
    let output = ProbeHandle::new();
    let shedding = worker.dataflow::<u64, _, _>(|scope| {
        let settings = job.settings(&testbed);
        // Random drops, or the lowest utility first (`--shed semantic`).
        let (admitted, shedding) =
            scope
                .input_from(&mut input)
                .shed_loop_with(&settings, job.controller(), &output, job.drops());
        // Few readers (`--readers one`): the admitted records spread over
        // every worker. The utility's bits are mixed first: timely's exchange
        // reads a hash's low bits, which a float below 0.5 has at zero.
        let admitted = if job.readers.exchanged() {
            admitted.exchange(|record: &Record| splitmix64(record.1.to_bits()))
        } else {
            admitted
        };
        // The application: at most a slice of time per activation, so that
        // the backlog shows in the output frontier and arrivals keep coming.
        let processing = testbed.clone();
        let process = move |_time: &u64, record: Record| {
            processing.process(&record);
            None::<()>
        };
        // Records that can no longer make the target are dropped before
        // their work is spent (`--drop-late false`: worked on anyway).
        if job.drop_late {
            admitted.time_sliced_within("Process", PROCESSING_SLICE, &shedding.deadline(), process)
        } else {
            admitted.time_sliced("Process", PROCESSING_SLICE, process)
        }
        .probe_with(&output);
        shedding
    });
    job.feed(worker, &testbed, input, &shedding, &output)
}
