//! Input-rate profiles: how many records per second arrive at each moment.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::common::lines::{for_each_line, OnError};
use crate::common::Error;

/// The highest arrival rate a profile may ask for, records/s: above what
/// one process can generate (the run would only queue arrivals in memory,
/// about 0.5 GB/s at 10¹² records/s).
pub const MAX_RATE: f64 = 1e8;

/// An arrival-rate profile, as written on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Profile {
    /// `constant:<rate>`
    Constant(f64),
    /// `step:<r1>:<r2>:<at_s>`
    Step {
        /// Rate before.
        before: f64,
        /// Rate from `at` on.
        after: f64,
        /// When, s.
        at: f64,
    },
    /// `ramp:<r1>:<r2>:<from_s>:<to_s>`: linear between the two times.
    Ramp {
        /// Rate until `from`.
        start: f64,
        /// Rate from `to` on.
        end: f64,
        /// Ramp start, s.
        from: f64,
        /// Ramp end, s.
        to: f64,
    },
    /// `sine:<mean>:<amp>:<period_s>`
    Sine {
        /// Mean rate.
        mean: f64,
        /// Amplitude.
        amplitude: f64,
        /// Period, s.
        period: f64,
    },
    /// `bursts:<base>:<peak>:<every_s>:<len_s>`: `peak` for `len` seconds
    /// every `every` seconds, `base` otherwise.
    Bursts {
        /// Rate between bursts.
        base: f64,
        /// Rate in a burst.
        peak: f64,
        /// Time from one burst to the next, s.
        every: f64,
        /// Length of a burst, s.
        length: f64,
    },
    /// `file:<PATH>`: CSV lines `<t_seconds>,<rate_per_s>`, linear between points.
    File {
        /// Where it came from.
        path: PathBuf,
        /// (time, rate) points, times increasing.
        points: Vec<(f64, f64)>,
    },
}

impl Profile {
    /// Records per second at time `t` seconds.
    pub fn rate(&self, t: f64) -> f64 {
        match self {
            Profile::Constant(rate) => *rate,
            Profile::Step { before, after, at } => {
                if t < *at {
                    *before
                } else {
                    *after
                }
            }
            Profile::Ramp { start, end, from, to } => {
                if t <= *from {
                    *start
                } else if t >= *to {
                    *end
                } else {
                    start + (end - start) * (t - from) / (to - from)
                }
            }
            Profile::Sine {
                mean,
                amplitude,
                period,
            } => (mean + amplitude * (std::f64::consts::TAU * t / period).sin()).max(0.0),
            Profile::Bursts {
                base,
                peak,
                every,
                length,
            } => {
                if t.rem_euclid(*every) < *length {
                    *peak
                } else {
                    *base
                }
            }
            Profile::File { points, .. } => interpolate(points, t),
        }
    }

    /// Reads a `file:` profile.
    pub fn from_file(path: &Path) -> Result<Self, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let mut points: Vec<(f64, f64)> = Vec::new();
        for_each_line(&bytes, path, OnError::Fail, |_, line| {
            let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?.trim();
            if text.is_empty() || text.starts_with('#') {
                return Ok(());
            }
            let (time, rate) = text
                .split_once(',')
                .ok_or_else(|| format!("expected <t_seconds>,<rate_per_s>, found `{text}`"))?;
            let number = |field: &str| field.trim().parse::<f64>().ok().filter(|v| v.is_finite());
            let (time, rate) = match (number(time), number(rate)) {
                (Some(time), Some(rate)) => (time, rate),
                _ => return Err(format!("`{text}` is not two numbers")),
            };
            if rate < 0.0 {
                return Err(format!("negative rate {rate}"));
            }
            if rate > MAX_RATE {
                return Err(format!("rate {rate} is above {MAX_RATE} records/s"));
            }
            if let Some(&(last, _)) = points.last() {
                if time <= last {
                    return Err(format!("time {time} does not increase (previous {last})"));
                }
            }
            points.push((time, rate));
            Ok(())
        })?;
        if points.is_empty() {
            return Err(Error::invalid(
                "--profile",
                format!("{}: no (time, rate) lines", path.display()),
            ));
        }
        Ok(Profile::File {
            path: path.to_owned(),
            points,
        })
    }
}

fn interpolate(points: &[(f64, f64)], t: f64) -> f64 {
    let after = points.partition_point(|&(time, _)| time <= t);
    match (after.checked_sub(1).map(|i| points[i]), points.get(after)) {
        (Some((t0, r0)), Some(&(t1, r1))) => r0 + (r1 - r0) * (t - t0) / (t1 - t0),
        (Some((_, r)), None) | (None, Some(&(_, r))) => r,
        (None, None) => 0.0,
    }
}

impl FromStr for Profile {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = |reason: String| Error::invalid("--profile", format!("`{text}`: {reason}"));
        if let Some(path) = text.strip_prefix("file:") {
            return Profile::from_file(Path::new(path));
        }
        let mut parts = text.split(':');
        let kind = parts.next().unwrap_or_default();
        let values: Vec<f64> = parts
            .map(|v| {
                v.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| bad(format!("`{v}` is not a number")))
            })
            .collect::<Result<_, _>>()?;
        if values.iter().any(|&v| v < 0.0) {
            return Err(bad("rates and times must not be negative".into()));
        }
        let arity = |n: usize, form: &str| {
            if values.len() == n {
                Ok(())
            } else {
                Err(bad(format!("expected {form}")))
            }
        };
        // Every form's first values are rates (times come after them);
        // check the rates by form below, the bound here for all of them.
        let rates = match kind {
            "constant" => 1,
            "step" | "ramp" | "bursts" => 2,
            "sine" => 2,
            _ => 0,
        };
        if let Some(rate) = values.iter().take(rates).find(|&&rate| rate > MAX_RATE) {
            return Err(bad(format!("rate {rate} is above {MAX_RATE} records/s")));
        }
        match kind {
            "constant" => arity(1, "constant:<rate>").map(|_| Profile::Constant(values[0])),
            "step" => arity(3, "step:<r1>:<r2>:<at_s>").map(|_| Profile::Step {
                before: values[0],
                after: values[1],
                at: values[2],
            }),
            "ramp" => {
                arity(4, "ramp:<r1>:<r2>:<from_s>:<to_s>")?;
                if values[3] <= values[2] {
                    return Err(bad("the ramp must end after it starts".into()));
                }
                Ok(Profile::Ramp {
                    start: values[0],
                    end: values[1],
                    from: values[2],
                    to: values[3],
                })
            }
            "sine" => {
                arity(3, "sine:<mean>:<amp>:<period_s>")?;
                if values[2] == 0.0 {
                    return Err(bad("the period must be positive".into()));
                }
                if values[1] > values[0] {
                    return Err(bad(format!(
                        "amplitude {} is above the mean {}: the rate would go negative",
                        values[1], values[0]
                    )));
                }
                Ok(Profile::Sine {
                    mean: values[0],
                    amplitude: values[1],
                    period: values[2],
                })
            }
            "bursts" => {
                arity(4, "bursts:<base>:<peak>:<every_s>:<len_s>")?;
                if values[2] == 0.0 {
                    return Err(bad("bursts need a positive interval".into()));
                }
                if values[1] < values[0] {
                    return Err(bad(format!("peak {} is below the base rate {}", values[1], values[0])));
                }
                Ok(Profile::Bursts {
                    base: values[0],
                    peak: values[1],
                    every: values[2],
                    length: values[3],
                })
            }
            other => Err(bad(format!(
                "unknown form `{other}` (constant, step, ramp, sine, bursts, file)"
            ))),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Profile::Constant(rate) => write!(f, "constant:{rate}"),
            Profile::Step { before, after, at } => write!(f, "step:{before}:{after}:{at}"),
            Profile::Ramp { start, end, from, to } => write!(f, "ramp:{start}:{end}:{from}:{to}"),
            Profile::Sine {
                mean,
                amplitude,
                period,
            } => write!(f, "sine:{mean}:{amplitude}:{period}"),
            Profile::Bursts {
                base,
                peak,
                every,
                length,
            } => write!(f, "bursts:{base}:{peak}:{every}:{length}"),
            Profile::File { path, .. } => write!(f, "file:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_give_rates() {
        let step: Profile = "step:100:300:2".parse().unwrap();
        assert_eq!((step.rate(1.9), step.rate(2.0)), (100.0, 300.0));
        let ramp: Profile = "ramp:100:300:1:3".parse().unwrap();
        assert_eq!((ramp.rate(0.5), ramp.rate(2.0), ramp.rate(4.0)), (100.0, 200.0, 300.0));
        let sine: Profile = "sine:100:50:4".parse().unwrap();
        assert!((sine.rate(1.0) - 150.0).abs() < 1e-9);
        let bursts: Profile = "bursts:10:90:5:1".parse().unwrap();
        assert_eq!(
            (bursts.rate(0.5), bursts.rate(2.0), bursts.rate(5.2)),
            (90.0, 10.0, 90.0)
        );
        assert_eq!("constant:7".parse::<Profile>().unwrap().rate(99.0), 7.0);
        for bad in [
            "linear:1",
            "step:1:2",
            "constant:-3",
            "ramp:1:2:3:3",
            "sine:1:1:0",
            "constant:x",
            // Beyond what one process can generate: memory, not arrivals.
            "constant:1e12",
            "step:10:1e9:1",
            // The rate would go negative, or the bursts are dips.
            "sine:10:20:1",
            "bursts:90:10:1:0.5",
        ] {
            let error = bad.parse::<Profile>().unwrap_err().to_string();
            assert!(error.contains("--profile"), "{bad}: {error}");
        }
    }

    #[test]
    fn rate_files_interpolate_and_reject_bad_lines() {
        let dir = std::env::temp_dir().join(format!("equipoise-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.csv");
        std::fs::write(&good, "# t,rate\n0,100\n10,200\n").unwrap();
        let profile: Profile = format!("file:{}", good.display()).parse().unwrap();
        assert_eq!((profile.rate(5.0), profile.rate(20.0)), (150.0, 200.0));
        for (name, text, expected) in [
            ("order.csv", "0,1\n5,2\n5,3\n", ":3: time 5 does not increase"),
            ("neg.csv", "0,1\n1,-2\n", ":2: negative rate"),
            ("junk.csv", "0,1\nabc\n", ":2: expected <t_seconds>,<rate_per_s>"),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            let error = format!("file:{}", path.display())
                .parse::<Profile>()
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
