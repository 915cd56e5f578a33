//! Which workers read the input of a shedding run: every worker alike, only
//! worker 0, or worker 0 a larger share. Under the last two the admitted
//! records are exchanged before the costly stage, as a program whose
//! readers are few must do.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::common::Error;

/// How the arrivals are split over the workers.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub enum Readers {
    /// `even`: every worker reads an equal share and processes what it admits.
    #[default]
    Even,
    /// `one`: worker 0 reads everything.
    One,
    /// `skewed:<share>`: worker 0 reads this share, the others the rest
    /// equally.
    Skewed(f64),
}

impl Readers {
    /// Worker `index`'s share of the arrivals, of `peers` workers.
    pub fn share(&self, index: usize, peers: usize) -> f64 {
        let first = match *self {
            Readers::Even => return 1.0 / peers as f64,
            Readers::One => 1.0,
            Readers::Skewed(share) => share,
        };
        match (index, peers) {
            (_, 1) => 1.0,
            (0, _) => first,
            _ => (1.0 - first) / (peers - 1) as f64,
        }
    }

    /// Whether admitted records are exchanged before the costly stage.
    pub fn exchanged(&self) -> bool {
        *self != Readers::Even
    }
}

impl FromStr for Readers {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self, Error> {
        let invalid = |why: &str| Error::invalid("--readers", format!("`{text}`: {why}"));
        match text.split_once(':') {
            None if text == "even" => Ok(Readers::Even),
            None if text == "one" => Ok(Readers::One),
            Some(("skewed", share)) => match share.parse::<f64>() {
                Ok(share) if (0.0..=1.0).contains(&share) => Ok(Readers::Skewed(share)),
                _ => Err(invalid("the share must be a number from 0 to 1")),
            },
            _ => Err(invalid("expected even, one or skewed:<share of worker 0>")),
        }
    }
}

impl fmt::Display for Readers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Readers::Even => f.write_str("even"),
            Readers::One => f.write_str("one"),
            Readers::Skewed(share) => write!(f, "skewed:{share}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_bad_text_is_refused() {
        for readers in ["even", "one", "skewed:0.8", "skewed:0"] {
            let readers: Readers = readers.parse().unwrap();
            for peers in 1..=4 {
                let total: f64 = (0..peers).map(|i| readers.share(i, peers)).sum();
                assert!((total - 1.0).abs() < 1e-12, "{readers} at {peers}");
            }
            assert_eq!(readers.to_string().parse::<Readers>().unwrap(), readers);
        }
        assert!((Readers::Skewed(0.8).share(2, 3) - 0.1).abs() < 1e-12);
        for bad in ["skewed:1.5", "skewed:x", "two", ""] {
            let error = bad.parse::<Readers>().unwrap_err().to_string();
            assert!(error.contains("--readers"), "{error}");
        }
    }
}
