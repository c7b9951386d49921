//! The benchmark's printed tables and its JSON result file: summaries per configuration for
//! the held-out and the tuning half, per-repository and per-language breakdowns, the case
//! selection counts, and the kinds of files filling each configuration's top six chunks when it
//! misses (with example commit ids). Request texts are never written.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{Value, json};

use crate::cases::Split;
use crate::metrics::{Scores, Summary, TOP_CHUNKS};
use crate::paths::{FileKind as Kind, classify};
use crate::results::{CaseResult, RepoRun};

pub struct Report<'a> {
    /// What the requests are, for the first line (`real fix commits`, `real issue reports`).
    pub title: &'a str,
    /// The names of the selection counts, in the order of [`crate::results::Selected::line`].
    pub selection_header: &'a str,
    pub configs: &'a [&'static str],
    pub runs: &'a [RepoRun],
    pub results: &'a [CaseResult],
    pub max_cases: usize,
    pub seconds: f64,
}

fn scores_of<'a>(
    results: impl Iterator<Item = &'a CaseResult>,
    config: &str,
) -> Vec<(&'a Scores, f64)> {
    results
        .filter_map(|r| {
            r.outcomes
                .iter()
                .find(|(n, _, _)| *n == config)
                .map(|(_, o, s)| (s, o.latency_ms))
        })
        .collect()
}

/// How the files of a missing configuration's top chunks divide into kinds.
struct Crowding {
    misses: usize,
    short_answers: usize,
    by_kind: BTreeMap<Kind, usize>,
    examples: BTreeMap<Kind, Vec<String>>,
    chunks: usize,
}

const EXAMPLES_PER_KIND: usize = 5;

impl<'a> Report<'a> {
    fn split(&self, split: Split) -> impl Iterator<Item = &'a CaseResult> + Clone {
        self.results.iter().filter(move |r| r.case.split == split)
    }

    fn summary(&self, rows: impl Iterator<Item = &'a CaseResult>, config: &str) -> Summary {
        Summary::of(scores_of(rows, config))
    }

    fn crowding(&self, split: Split, config: &str) -> Crowding {
        let mut c = Crowding {
            misses: 0,
            short_answers: 0,
            by_kind: BTreeMap::new(),
            examples: BTreeMap::new(),
            chunks: 0,
        };
        for r in self.split(split) {
            let Some((_, outcome, scores)) = r.outcomes.iter().find(|(n, _, _)| *n == config)
            else {
                continue;
            };
            if scores.chunks6 {
                continue;
            }
            c.misses += 1;
            c.short_answers += usize::from(outcome.chunk_files.len() < TOP_CHUNKS);
            let mut here: BTreeMap<Kind, usize> = BTreeMap::new();
            for f in outcome.chunk_files.iter().take(TOP_CHUNKS) {
                *here.entry(classify(f, r.repo.foreign)).or_default() += 1;
                c.chunks += 1;
            }
            for (kind, n) in here {
                *c.by_kind.entry(kind).or_default() += n;
                // A kind "crowds" a ranking when it holds half of the returned chunks.
                if kind != Kind::Source && n * 2 >= outcome.chunk_files.len().max(1) {
                    let ex = c.examples.entry(kind).or_default();
                    if ex.len() < EXAMPLES_PER_KIND {
                        ex.push(format!("{} {}", r.repo.short(), r.case.label()));
                    }
                }
            }
        }
        c
    }

    fn table(&self, out: &mut String, split: Split) {
        let rows: Vec<&CaseResult> = self.split(split).collect();
        let _ = writeln!(
            out,
            "\n{} half: {} cases\n{:<26} {:<20} {:<20} {:<20} {:<20} {:<16} latency ms min/median/p99",
            split.label(),
            rows.len(),
            "configuration",
            "Acc@1",
            "Acc@5",
            "Chunks@6",
            "Recall@5",
            "MRR@10",
        );
        for config in self.configs {
            let s = self.summary(rows.iter().copied(), config);
            let _ = writeln!(
                out,
                "{:<26} {:<20} {:<20} {:<20} {:<20} {:<16} {:.1} / {:.1} / {:.1}",
                config,
                s.acc1.cell(),
                s.acc5.cell(),
                s.chunks6.cell(),
                s.recall5.cell(),
                format!("{:.3} ±{:.3}", s.mrr10, s.mrr10_pm),
                s.latency.min_ms,
                s.latency.median_ms,
                s.latency.p99_ms
            );
        }
    }

    fn breakdown(&self, out: &mut String, split: Split) {
        let mut groups: Vec<(String, String, Vec<&CaseResult>)> = Vec::new();
        for run in self.runs {
            let rows: Vec<&CaseResult> = self
                .split(split)
                .filter(|r| r.repo.slug == run.repo.slug)
                .collect();
            groups.push((run.repo.short().into(), run.repo.lang_label().into(), rows));
        }
        let mut langs: BTreeMap<&str, Vec<&CaseResult>> = BTreeMap::new();
        for r in self.split(split) {
            langs.entry(r.repo.lang_label()).or_default().push(r);
        }
        for (lang, rows) in langs {
            groups.push((format!("all {lang}"), lang.into(), rows));
        }
        let _ = write!(
            out,
            "\n{} half by repository and language: Chunks@6 / Acc@5\n{:<15} {:<11} {:>5}",
            split.label(),
            "repository",
            "language",
            "cases"
        );
        for config in self.configs {
            let _ = write!(out, "   {config:<26}");
        }
        out.push('\n');
        for (name, lang, rows) in groups {
            let _ = write!(out, "{:<15} {:<11} {:>5}", name, lang, rows.len());
            for config in self.configs {
                let s = self.summary(rows.iter().copied(), config);
                let _ = write!(
                    out,
                    "   {:<26}",
                    format!("{:.2} / {:.2}", s.chunks6.value, s.acc5.value)
                );
            }
            out.push('\n');
        }
    }

    fn crowding_text(&self, out: &mut String, split: Split, config: &str) {
        let c = self.crowding(split, config);
        let _ = writeln!(
            out,
            "\n{config}, {} half: {} cases without a gold file among the top-6 chunks ({} of them answered with fewer than 6 chunks)",
            split.label(),
            c.misses,
            c.short_answers
        );
        let total = c.chunks.max(1) as f64;
        let parts: Vec<String> = Kind::ALL
            .iter()
            .filter_map(|k| c.by_kind.get(k).map(|n| (k, n)))
            .map(|(k, n)| format!("{} {:.0}% ({n})", k.label(), 100.0 * *n as f64 / total))
            .collect();
        let _ = writeln!(
            out,
            "  their top-6 chunks by file kind: {}",
            parts.join(" · ")
        );
        for (kind, ex) in &c.examples {
            let _ = writeln!(
                out,
                "  {} fills half or more: {}",
                kind.label(),
                ex.join(", ")
            );
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        let held = self.split(Split::HeldOut).count();
        let _ = writeln!(
            out,
            "Retrieval on {}: {} repositories, {} cases ({} held-out, {} tuning), at most {} per repository; {} build{}; {:.0} s",
            self.title,
            self.runs.len(),
            self.results.len(),
            held,
            self.results.len() - held,
            self.max_cases,
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "optimised"
            },
            if cfg!(debug_assertions) {
                " (latency not representative)"
            } else {
                ""
            },
            self.seconds
        );
        let _ = writeln!(
            out,
            "Acc@k: a gold file among the first k files; Chunks@6: among the files of the 6 chunks returned as shipped; Recall@5: every gold file in the first 5 files; [Wilson 95%]"
        );
        if held > 0 {
            self.table(&mut out, Split::HeldOut);
            self.breakdown(&mut out, Split::HeldOut);
            for config in self.configs {
                self.crowding_text(&mut out, Split::HeldOut, config);
            }
        }
        if held < self.results.len() {
            self.table(&mut out, Split::Tuning);
            self.breakdown(&mut out, Split::Tuning);
            if held == 0 {
                for config in self.configs {
                    self.crowding_text(&mut out, Split::Tuning, config);
                }
            }
        }
        let _ = writeln!(
            out,
            "\ncase selection per repository: {}",
            self.selection_header
        );
        for run in self.runs {
            let _ = writeln!(
                out,
                "{:<12} {}   (indexing {:.0} s, baseline {} files{})",
                run.repo.short(),
                run.selection.line(),
                run.index_seconds,
                run.baseline_files,
                if run.hybrid_fallbacks > 0 {
                    format!(
                        ", hybrid fell back to lexical {} times",
                        run.hybrid_fallbacks
                    )
                } else {
                    String::new()
                }
            );
        }
        out
    }

    fn summaries_json(&self, split: Split) -> Value {
        let mut by_config = serde_json::Map::new();
        for config in self.configs {
            let mut per_repo = serde_json::Map::new();
            for run in self.runs {
                let rows = self.split(split).filter(|r| r.repo.slug == run.repo.slug);
                per_repo.insert(run.repo.slug.into(), json!(self.summary(rows, config)));
            }
            by_config.insert(
                (*config).into(),
                json!({
                    "all": self.summary(self.split(split), config),
                    "per_repository": per_repo,
                }),
            );
        }
        Value::Object(by_config)
    }

    pub fn json(&self) -> Value {
        let crowding = |split| {
            self.configs
                .iter()
                .map(|config| {
                    let c = self.crowding(split, config);
                    let value = json!({
                        "misses": c.misses,
                        "answers_shorter_than_6": c.short_answers,
                        "top6_chunks_by_kind": c.by_kind.iter().map(|(k, n)| (k.label(), *n)).collect::<BTreeMap<_, _>>(),
                        "examples": c.examples.iter().map(|(k, e)| (k.label(), e.clone())).collect::<BTreeMap<_, _>>(),
                    });
                    (config.to_string(), value)
                })
                .collect::<serde_json::Map<_, _>>()
        };
        json!({
            "requests": self.title,
            "build": if cfg!(debug_assertions) { "debug" } else { "optimised" },
            "seconds": self.seconds,
            "max_cases_per_repository": self.max_cases,
            "configurations": self.configs,
            "repositories": self.runs.iter().map(|r| json!({
                "slug": r.repo.slug,
                "url": r.repo.url(),
                "pinned": r.repo.pinned,
                "language": r.repo.lang_label(),
                "selection": r.selection,
                "index_seconds": r.index_seconds,
                "baseline_files": r.baseline_files,
                "hybrid_fallbacks": r.hybrid_fallbacks,
            })).collect::<Vec<_>>(),
            "held_out": self.summaries_json(Split::HeldOut),
            "tuning": self.summaries_json(Split::Tuning),
            "crowding_held_out": crowding(Split::HeldOut),
            "crowding_tuning": crowding(Split::Tuning),
            "cases": self.results.iter().map(|r| json!({
                "repository": r.repo.slug,
                "commit": r.case.sha,
                "parent": r.case.parent,
                "split": r.case.split,
                "request_chars": r.case.request.chars().count(),
                "gold": r.case.gold,
                "outcomes": r.outcomes.iter().map(|(n, o, s)| (n.to_string(), json!({
                    "files": o.files,
                    "chunk_files": o.chunk_files,
                    "latency_ms": o.latency_ms,
                    "scores": s,
                }))).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
        })
    }
}
