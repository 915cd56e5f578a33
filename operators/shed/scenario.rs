//! The load scenarios the shedding benchmarks share: rate profiles set
//! relative to the capacity, a step in the per-record cost, and a thread
//! competing for the CPU.

use super::job::CostStep;
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
