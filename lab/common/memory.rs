//! Refusing, before allocating, a setting whose memory cannot fit: a
//! clear error with the figure instead of an abort or a machine that swaps.

use crate::common::Error;

/// Bytes of memory this machine can still give a process without swapping
/// (`MemAvailable` of `/proc/meminfo`); `None` where that is not known.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The share of the available memory one setting may take: the rest is
/// for everything else the run and the machine hold.
const USABLE_SHARE: f64 = 0.8;

/// Refuses `setting` = `value` if it needs `bytes_needed`, more than 80 %
/// of the memory available (when that is known); names both figures.
pub fn check_fits(setting: &str, value: &str, bytes_needed: u64) -> Result<(), Error> {
    match available_bytes() {
        Some(available) if bytes_needed as f64 > USABLE_SHARE * available as f64 => Err(Error::invalid(
            setting,
            format!(
                "`{value}` needs about {} of memory, more than {:.0} % of the {} this machine has available",
                human(bytes_needed),
                USABLE_SHARE * 100.0,
                human(available)
            ),
        )),
        _ => Ok(()),
    }
}

/// `bytes` in the largest unit that keeps the figure at least 1.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_cannot_fit_is_refused_with_both_figures() {
        assert_eq!(human(999), "999.0 B");
        assert_eq!(human(21_500_000_000), "21.5 GB");
        assert_eq!(human(u64::MAX), "18.4 EB");
        if let Some(available) = available_bytes() {
            assert!(available > 0);
            let error = check_fits("--keys", "zipf:1:9", u64::MAX).unwrap_err().to_string();
            assert!(
                error.contains("--keys") && error.contains("needs about 18.4 EB") && error.contains("available"),
                "{error}"
            );
            assert!(check_fits("--keys", "zipf:1:9", 1).is_ok());
        }
    }
}
