//! Latency histograms: HdrHistogram in nanoseconds with three significant digits
//! (values are kept within 0.1%), fixed size whatever the run length, one per
//! thread and per timing, merged at the end.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::Duration;

/// The longest latency kept exactly: one hour (longer ones are clamped to it).
const HIGHEST_NS: u64 = 3_600_000_000_000;

#[derive(Clone, Debug)]
pub struct Latency {
    h: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

/// min, mean, standard deviation, median and max of a timing, in milliseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Stat {
    pub min_ms: f64,
    pub mean_ms: f64,
    pub sd_ms: f64,
    pub median_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub fn new() -> Latency {
        Latency { h: Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("valid histogram bounds") }
    }

    pub fn record(&mut self, d: Duration) {
        let ns = (d.as_nanos() as u64).clamp(1, HIGHEST_NS);
        // Cannot fail: the value is within the bounds.
        let _ = self.h.record(ns);
    }

    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides: cannot fail.
        let _ = self.h.add(&other.h);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// The latency at or below which `p` percent of the values fall, in milliseconds.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        ms(self.h.value_at_percentile(p.clamp(0.0, 100.0)))
    }

    pub fn max_ms(&self) -> f64 {
        if self.h.is_empty() { 0.0 } else { ms(self.h.max()) }
    }

    pub fn stat(&self) -> Stat {
        if self.h.is_empty() {
            return Stat::default();
        }
        Stat {
            min_ms: ms(self.h.min()),
            mean_ms: self.h.mean() / 1e6,
            sd_ms: self.h.stdev() / 1e6,
            median_ms: ms(self.h.value_at_quantile(0.5)),
            max_ms: ms(self.h.max()),
        }
    }

    /// Points for a latency curve: (percentile, ms) from 0 to 100 on a scale that
    /// grows finer towards the tail.
    pub fn curve(&self) -> Vec<(f64, f64)> {
        let mut ps = vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0];
        ps.extend([95.0, 97.5, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999, 100.0]);
        ps.into_iter().map(|p| (p, self.percentile_ms(p))).collect()
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Percentiles of a known distribution (exponential, mean 2 ms, plus a slow tail)
    /// agree with the exact ones computed from the sorted samples within 1%.
    #[test]
    fn percentiles_match_a_known_distribution() {
        let mut exact: Vec<u64> = Vec::new();
        // A deterministic generator (xorshift) so the test is the same every run.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let mut ns = (-(1.0 - u).ln() * 2_000_000.0) as u64 + 20_000;
            if i % 1000 == 0 {
                ns += 250_000_000; // one in a thousand stalls a quarter second
            }
            exact.push(ns);
        }
        let mut two = (Latency::new(), Latency::new());
        for (i, &v) in exact.iter().enumerate() {
            let h = if i % 2 == 0 { &mut two.0 } else { &mut two.1 };
            h.record(Duration::from_nanos(v));
        }
        let mut h = two.0;
        h.merge(&two.1);
        assert_eq!(h.count(), exact.len() as u64);
        exact.sort_unstable();
        for p in [1.0, 10.0, 50.0, 66.0, 75.0, 90.0, 95.0, 98.0, 99.0, 99.9, 99.95, 100.0] {
            let rank = ((p / 100.0 * exact.len() as f64).ceil() as usize).clamp(1, exact.len());
            let want = exact[rank - 1] as f64 / 1e6;
            let got = h.percentile_ms(p);
            assert!((got - want).abs() <= want * 0.01, "p{p}: {got} ms vs exact {want} ms");
        }
        let mean = exact.iter().sum::<u64>() as f64 / exact.len() as f64 / 1e6;
        let s = h.stat();
        assert!((s.mean_ms - mean).abs() <= mean * 0.01, "mean {} vs {mean}", s.mean_ms);
        assert!((s.max_ms - *exact.last().unwrap() as f64 / 1e6).abs() < 0.3);
    }
}
