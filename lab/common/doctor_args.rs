//! The examples' skew report flags (`equipoise::doctor`): where to write
//! the report as JSON and as a page, its windows of time, and whether to
//! size the arrangements.

use std::path::PathBuf;
use std::time::Duration;

use equipoise::doctor::{Report, Settings};

use crate::common::program::{write_page, write_report};
use crate::common::Error;

/// The skew report's flags, shared by every example that takes them.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// Write the skew report of this dataflow (`equipoise::doctor`: each
    /// operator's records, busy time and arranged records per worker and
    /// per window of time, the busiest worker over the mean, the costliest
    /// first, the channels' records between workers, the sampled keys) to
    /// PATH as JSON (from the process hosting worker 0).
    #[arg(long, value_name = "PATH")]
    pub doctor: Option<PathBuf>,
    /// Write the skew report as a self-contained HTML page to PATH: the
    /// dataflow drawn, each operator coloured by its busiest worker over
    /// the mean, the costliest table and the sampled keys beside it.
    #[arg(long, value_name = "PATH")]
    pub doctor_html: Option<PathBuf>,
    /// The skew report's windows of time, in milliseconds
    /// (`doctor::Settings::period`).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub doctor_period_ms: u64,
    /// Leave out the records each arrangement holds, as the report does
    /// unless `--doctor-arrangements` is given.
    #[arg(long, conflicts_with = "doctor_arrangements")]
    pub doctor_without_arrangements: bool,
    /// Size each arrangement in the report
    /// (`doctor::Settings::arrangements`), from differential's log, which
    /// also logs every change of every arrangement's batcher (it cost a
    /// count 7 % of its CPU).
    #[arg(long)]
    pub doctor_arrangements: bool,
}

/// No report, as without the flags.
impl Default for DoctorArgs {
    fn default() -> Self {
        DoctorArgs {
            doctor: None,
            doctor_html: None,
            doctor_period_ms: Settings::default().period.as_millis() as u64,
            doctor_without_arrangements: false,
            doctor_arrangements: false,
        }
    }
}

impl DoctorArgs {
    /// The doctor's settings, if a report is asked for.
    pub fn settings(&self) -> Result<Option<Settings>, Error> {
        if self.doctor_period_ms == 0 {
            return Err(Error::invalid("--doctor-period-ms", "must be at least 1"));
        }
        if self.doctor.is_none() && self.doctor_html.is_none() {
            for (flag, given) in [
                ("--doctor-without-arrangements", self.doctor_without_arrangements),
                ("--doctor-arrangements", self.doctor_arrangements),
            ] {
                if given {
                    return Err(Error::invalid(flag, "applies with --doctor or --doctor-html only"));
                }
            }
            return Ok(None);
        }
        let settings = Settings::default().with_period(Duration::from_millis(self.doctor_period_ms));
        Ok(Some(if self.doctor_arrangements {
            settings.with_arrangements()
        } else {
            settings.without_arrangements()
        }))
    }

    /// Writes `diagnosed` where asked, if there is one (in the process
    /// hosting worker 0).
    pub fn write(&self, diagnosed: Option<&Report>) -> Result<(), Error> {
        let Some(report) = diagnosed else {
            return Ok(());
        };
        if let Some(path) = &self.doctor {
            write_report(path, report)?;
        }
        if let Some(path) = &self.doctor_html {
            write_page(path, report)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_ask_for_no_report_and_a_period_of_zero_is_refused() {
        assert_eq!(DoctorArgs::default().settings().unwrap(), None);
        let zero = DoctorArgs {
            doctor_period_ms: 0,
            ..DoctorArgs::default()
        };
        assert!(zero.settings().unwrap_err().to_string().contains("--doctor-period-ms"));
        let asked = DoctorArgs {
            doctor_html: Some("page.html".into()),
            doctor_period_ms: 250,
            ..DoctorArgs::default()
        };
        assert_eq!(asked.settings().unwrap().unwrap().period, Duration::from_millis(250));
    }

    #[test]
    fn the_arrangements_are_sized_only_when_asked_for_with_a_report() {
        let report = DoctorArgs {
            doctor: Some("report.json".into()),
            ..DoctorArgs::default()
        };
        assert!(!report.settings().unwrap().unwrap().arrangements);
        let sized = DoctorArgs {
            doctor_arrangements: true,
            ..report.clone()
        };
        assert!(sized.settings().unwrap().unwrap().arrangements);
        let alone = DoctorArgs {
            doctor_arrangements: true,
            ..DoctorArgs::default()
        };
        assert!(alone
            .settings()
            .unwrap_err()
            .to_string()
            .contains("--doctor-arrangements"));
        // Both flags at once: clap refuses them, naming both.
        let both = <DoctorArgs as clap::Args>::augment_args(clap::Command::new("example")).try_get_matches_from([
            "example",
            "--doctor",
            "r.json",
            "--doctor-arrangements",
            "--doctor-without-arrangements",
        ]);
        let error = both.unwrap_err().to_string();
        assert!(error.contains("--doctor-arrangements") && error.contains("--doctor-without-arrangements"));
    }
}
