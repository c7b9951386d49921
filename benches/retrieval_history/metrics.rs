//! Scores of one ranking against a case's gold files, and their aggregates. Files are ranked
//! by their best chunk (distinct files in chunk order). Acc@1 and Acc@5: a gold file is the
//! first file, or among the first five. Chunks@6: a gold file is among the files of the first
//! six chunks a configuration returns as it ships (for whole-file rankings, six files).
//! Recall@5: every gold file is among the first five files. MRR@10: the reciprocal rank of the
//! first gold file among the first ten files (0 beyond). Proportions carry Wilson 95%
//! intervals; MRR a normal-approximation 95% interval; latency its min, median and p99.

use serde::Serialize;

/// What one configuration answered for one case.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    /// Distinct files, best first (at most ten).
    pub files: Vec<String>,
    /// The files of the returned chunks as shipped, in chunk order (at most six chunks).
    pub chunk_files: Vec<String>,
    /// Wall time of the shipped query.
    pub latency_ms: f64,
}

/// One case's scores.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Scores {
    pub at1: bool,
    pub at5: bool,
    pub chunks6: bool,
    pub recall5: bool,
    pub rr10: f64,
    /// 1-based rank of the first gold file among the ten files.
    pub rank: Option<usize>,
}

pub const TOP_FILES: usize = 10;
pub const TOP_CHUNKS: usize = 6;

pub fn score(outcome: &Outcome, gold: &[String]) -> Scores {
    let is_gold = |f: &String| gold.contains(f);
    let rank = outcome
        .files
        .iter()
        .take(TOP_FILES)
        .position(is_gold)
        .map(|r| r + 1);
    let top5 = &outcome.files[..outcome.files.len().min(5)];
    Scores {
        at1: rank == Some(1),
        at5: rank.is_some_and(|r| r <= 5),
        chunks6: outcome.chunk_files.iter().take(TOP_CHUNKS).any(is_gold),
        recall5: gold.iter().all(|g| top5.contains(g)),
        rr10: rank.map_or(0.0, |r| 1.0 / r as f64),
        rank,
    }
}

/// A proportion with its Wilson 95% interval.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Proportion {
    pub hits: usize,
    pub n: usize,
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

impl Proportion {
    pub fn new(hits: usize, n: usize) -> Proportion {
        let (low, high) = wilson(hits, n);
        Proportion {
            hits,
            n,
            value: if n == 0 { 0.0 } else { hits as f64 / n as f64 },
            low,
            high,
        }
    }

    /// `0.731 [0.68–0.78]`
    pub fn cell(&self) -> String {
        format!("{:.3} [{:.2}–{:.2}]", self.value, self.low, self.high)
    }
}

/// Wilson score interval at 95% for `hits` successes in `n` trials.
pub fn wilson(hits: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n = n as f64;
    let p = hits as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Min, median and 99th percentile of latencies (ms).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Latency {
    pub min_ms: f64,
    pub median_ms: f64,
    pub p99_ms: f64,
}

impl Latency {
    pub fn of(samples: &[f64]) -> Latency {
        if samples.is_empty() {
            return Latency::default();
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let at = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
        Latency {
            min_ms: s[0],
            median_ms: at(0.5),
            p99_ms: at(0.99),
        }
    }
}

/// Aggregated scores of one configuration over a set of cases.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub cases: usize,
    pub acc1: Proportion,
    pub acc5: Proportion,
    pub chunks6: Proportion,
    pub recall5: Proportion,
    pub mrr10: f64,
    /// Half-width of the 95% interval of MRR@10.
    pub mrr10_pm: f64,
    pub latency: Latency,
}

impl Summary {
    pub fn of<'a>(rows: impl IntoIterator<Item = (&'a Scores, f64)>) -> Summary {
        let (mut n, mut at1, mut at5, mut c6, mut r5) = (0, 0, 0, 0, 0);
        let mut rr = Vec::new();
        let mut latencies = Vec::new();
        for (s, latency) in rows {
            n += 1;
            at1 += usize::from(s.at1);
            at5 += usize::from(s.at5);
            c6 += usize::from(s.chunks6);
            r5 += usize::from(s.recall5);
            rr.push(s.rr10);
            latencies.push(latency);
        }
        let mean = if n == 0 {
            0.0
        } else {
            rr.iter().sum::<f64>() / n as f64
        };
        let var = if n < 2 {
            0.0
        } else {
            rr.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        };
        Summary {
            cases: n,
            acc1: Proportion::new(at1, n),
            acc5: Proportion::new(at5, n),
            chunks6: Proportion::new(c6, n),
            recall5: Proportion::new(r5, n),
            mrr10: mean,
            mrr10_pm: if n == 0 {
                0.0
            } else {
                1.96 * (var / n as f64).sqrt()
            },
            latency: Latency::of(&latencies),
        }
    }
}
