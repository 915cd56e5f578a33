//! System identification of a running shedding dataflow: hold the delay
//! near the target with a slow PI, dither the admitted rate with a two-level
//! pseudo-random input, and fit the ARX model to what the controller saw.

use serde::{Deserialize, Serialize};

use crate::common::Error;

use super::job::{run_shedding, ControllerSpec, ShedJob};
use super::profile::Profile;
use equipoise::shed::design::{fit_identification, nominal_pi, ArxModel, MEASURED_DELAY_POLES};
use equipoise::shed::ExcitationSpec;
use equipoise::shed::Prediction;

/// How to identify the shedding dataflow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Identification {
    /// Worker threads.
    pub workers: usize,
    /// Processing cost per record, µs.
    pub cost_us: f64,
    /// Sampling period, ms.
    pub period_ms: f64,
    /// Length of the experiment, s.
    pub duration_s: f64,
    /// Arrival rate as a multiple of the nominal capacity (above 1, so that
    /// the admitted rate is the controller's to set).
    pub arrival: f64,
    /// Dither amplitude as a fraction of the nominal capacity.
    pub amplitude: f64,
    /// Periods each dither level holds.
    pub hold: usize,
    /// Delay the stabilizing PI holds, ms.
    pub target_ms: f64,
    /// The delay to model (the one the designed controller will see).
    pub prediction: Prediction,
    /// Seed of the dither and the shedder.
    pub seed: u64,
}

impl Default for Identification {
    fn default() -> Self {
        Identification {
            workers: 1,
            cost_us: 20.0,
            period_ms: 100.0,
            duration_s: 10.0,
            arrival: 2.0,
            amplitude: ExcitationSpec::AMPLITUDE,
            hold: ExcitationSpec::HOLD,
            target_ms: 300.0,
            prediction: Prediction::Smith,
            seed: 1,
        }
    }
}

impl Identification {
    /// Nominal capacity of one worker, records/s.
    pub fn capacity_per_worker(&self) -> f64 {
        super::job::capacity_per_worker(self.cost_us)
    }

    /// Runs the experiment and fits the model (per worker: input records/s
    /// admitted by one worker, output ms).
    pub fn run(&self) -> Result<ArxModel, Error> {
        if !(self.arrival > 1.0 && self.arrival.is_finite()) {
            return Err(Error::invalid(
                "--arrival",
                format!("{} does not overload the dataflow (need more than 1)", self.arrival),
            ));
        }
        if !(self.amplitude > 0.0 && self.amplitude < 1.0) {
            return Err(Error::invalid(
                "--amplitude",
                format!("{} is not a fraction between 0 and 1", self.amplitude),
            ));
        }
        let per_worker = self.capacity_per_worker();
        let excitation = ExcitationSpec {
            amplitude: self.amplitude * per_worker,
            hold: self.hold,
            seed: 0x2f1 ^ self.seed as u16,
        };
        // A slow loop holds the delay near the target; the dither excites it.
        let controller =
            ControllerSpec::Excited(nominal_pi(self.period_ms, per_worker, MEASURED_DELAY_POLES), excitation);
        let job = ShedJob {
            prediction: self.prediction,
            target_ms: self.target_ms,
            period_ms: self.period_ms,
            duration_s: self.duration_s,
            cost_us: self.cost_us,
            seed: self.seed,
            // The plant as it is: records dropped late would bend the
            // delay's response to the admitted rate.
            drop_late: false,
            ..ShedJob::new(
                controller,
                Profile::Constant(self.arrival * per_worker * self.workers as f64),
            )
        };
        let report = run_shedding(job, self.workers)?;
        let admitted: Vec<f64> = report
            .trace
            .iter()
            .map(|row| row.admitted_rate / self.workers as f64)
            .collect();
        let delay: Vec<f64> = report.trace.iter().map(|row| row.controlled_delay_ms).collect();
        Ok(fit_identification(&admitted, &delay, self.target_ms)?)
    }
}
