//! The load scenarios the shedding benchmarks share: rate profiles set
//! relative to the capacity, a step in the per-record cost, and a thread
//! competing for the CPU.

use super::job::{CostStep, ShedJob};
use super::profile::Profile;

/// One benchmark scenario over a run of `duration_s`.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name in tables.
    pub name: &'static str,
    /// The arrival rate over time.
    pub profile: Profile,
    /// A step in the per-record cost.
    pub cost_step: Option<CostStep>,
    /// When a step (in load or cost) comes, s: settling is counted from it.
    pub step_at: Option<f64>,
    /// From this time on, s, a thread spins on a core of its own.
    pub competitor_from: Option<f64>,
}

/// The scenarios for `capacity` records/s over `d` seconds at `cost_us` µs
/// per record (C below is the capacity).
pub fn scenarios(capacity: f64, d: f64, cost_us: f64) -> Vec<Scenario> {
    let (low, high) = (0.5 * capacity, 3.0 * capacity);
    let profile = |text: String| text.parse::<Profile>().expect("a valid profile");
    let plain = |name, text: String| Scenario {
        name,
        profile: profile(text),
        cost_step: None,
        step_at: None,
        competitor_from: None,
    };
    let cost_step = CostStep {
        cost_us: 2.0 * cost_us,
        at_s: d * 0.3,
    };
    vec![
        // From one overload to a heavier one, so the delay sits at the
        // target before the step.
        Scenario {
            step_at: Some(d * 0.5),
            ..plain(
                "step up (between overloads)",
                format!("step:{}:{}:{}", 1.2 * capacity, 1.8 * capacity, d * 0.5),
            )
        },
        // A flash crowd: from half the capacity to six times it.
        Scenario {
            step_at: Some(d * 0.2),
            ..plain(
                "step up (flash crowd)",
                format!("step:{low}:{}:{}", 6.0 * capacity, d * 0.2),
            )
        },
        plain("ramp up (to 3 C)", format!("ramp:{low}:{high}:{}:{}", d * 0.2, d * 0.8)),
        plain(
            "ramp up (to 6 C)",
            format!("ramp:{low}:{}:{}:{}", 6.0 * capacity, d * 0.2, d * 0.8),
        ),
        plain("ramp down", format!("ramp:{high}:{low}:{}:{}", d * 0.2, d * 0.8)),
        plain("sine", format!("sine:{capacity}:{}:{}", 0.6 * capacity, d / 2.0)),
        plain(
            "bursts",
            format!("bursts:{low}:{}:{}:{}", 2.0 * capacity, d / 5.0, d / 20.0),
        ),
        // Capacity halves under a steady 0.8 C.
        Scenario {
            cost_step: Some(cost_step),
            step_at: Some(cost_step.at_s),
            ..plain("cost step", format!("constant:{}", 0.8 * capacity))
        },
        // The same while another thread takes a core.
        Scenario {
            cost_step: Some(cost_step),
            step_at: Some(cost_step.at_s),
            competitor_from: Some(cost_step.at_s),
            ..plain("cost step + CPU competitor", format!("constant:{}", 0.8 * capacity))
        },
    ]
}

/// Length of a step of [`Scenario::least_loss`]'s fluid model, s.
const FLUID_STEP_S: f64 = 0.001;

impl Scenario {
    /// The least loss ratio of any shedder that admits no record it cannot
    /// have processed within the target delay, in this scenario run as
    /// `job` on `workers` workers: a fluid model in which the workers
    /// process records at their nominal capacity (a competing thread takes
    /// its share of the machine's cores from when it starts) and a record is
    /// admitted whenever the records ahead of it and itself can be processed
    /// within the target. For one queue and one deadline for all, admitting
    /// whenever possible admits the most. A shedder with less loss let some
    /// records wait longer than the target.
    pub fn least_loss(&self, job: &ShedJob, workers: usize) -> f64 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let capacity = |t: f64| {
            let share = match self.competitor_from {
                Some(from) if t >= from => (cores / (workers as f64 + 1.0)).min(1.0),
                _ => 1.0,
            };
            job.capacity(workers, t) * share
        };
        let steps = (job.duration_s / FLUID_STEP_S).ceil() as usize;
        let window = ((job.target_ms / 1000.0 / FLUID_STEP_S).round() as usize).max(1);
        // Records the workers can process in each step.
        let served: Vec<f64> = (0..steps + window)
            .map(|k| capacity((k as f64 + 0.5) * FLUID_STEP_S) * FLUID_STEP_S)
            .collect();
        // What they can process within the target from the current step on.
        let mut within: f64 = served[..window].iter().sum();
        let (mut queue, mut admitted, mut arrived) = (0.0f64, 0.0, 0.0);
        for k in 0..steps {
            let arriving = job.profile.rate((k as f64 + 0.5) * FLUID_STEP_S) * FLUID_STEP_S;
            let admit = arriving.min((within - queue).max(0.0));
            arrived += arriving;
            admitted += admit;
            queue = (queue + admit - served[k]).max(0.0);
            within += served[k + window] - served[k];
        }
        if arrived > 0.0 {
            1.0 - admitted / arrived
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shed::job::ControllerSpec;

    fn plain(profile: Profile) -> Scenario {
        Scenario {
            name: "test",
            profile,
            cost_step: None,
            step_at: None,
            competitor_from: None,
        }
    }

    #[test]
    fn least_loss_admits_capacity_and_one_target_of_backlog() {
        // 20 µs per record: C = 50 000/s per worker.
        for (workers, target_ms) in [(1, 1000.0), (2, 300.0)] {
            let c = 50_000.0 * workers as f64;
            // 2 C for 10 s: C·(10 s + D_t) of 2 C·10 s admitted.
            let job = ShedJob {
                target_ms,
                ..ShedJob::new(ControllerSpec::None, Profile::Constant(2.0 * c))
            };
            let expected = 1.0 - (10.0 + target_ms / 1000.0) / 20.0;
            let least = plain(job.profile.clone()).least_loss(&job, workers);
            assert!((least - expected).abs() < 1e-3, "{least} vs {expected}");
            // The flash crowd: C·(1 s + 8 s + D_t) of C·(1 s + 48 s).
            let crowd = Profile::Step {
                before: 0.5 * c,
                after: 6.0 * c,
                at: 2.0,
            };
            let job = ShedJob {
                target_ms,
                ..ShedJob::new(ControllerSpec::None, crowd.clone())
            };
            let expected = 1.0 - (9.0 + target_ms / 1000.0) / 49.0;
            let least = plain(crowd).least_loss(&job, workers);
            assert!((least - expected).abs() < 1e-3, "{least} vs {expected}");
        }
        // Under capacity nothing need be lost.
        let job = ShedJob::new(ControllerSpec::None, Profile::Constant(40_000.0));
        assert_eq!(plain(job.profile.clone()).least_loss(&job, 1), 0.0);
    }
}
