//! The computed variables, the lowest layer of a render: the injectable clock (frozen at
//! [`FROZEN_NOW`] where nothing names an instant), the date range it yields for the analysis
//! period, and the period itself, which a higher layer may set under either of its two names
//! (`analysis_period_days`, `lookback_days`).

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, Utc};
use serde_json::{Map, Value};

use super::coerce::coerce;
use crate::registry::ArgType;

/// Default length of the analysis period, in days.
pub const DEFAULT_PERIOD_DAYS: i64 = 90;

/// The instant a frozen clock shows when nothing names one: trial renders (`promptd check`)
/// and prompt tests, so their text is the same on every machine and every day.
pub const FROZEN_NOW: &str = "2026-01-15T12:00:00Z";

/// The names of the analysis period, in the order a layer is searched for it.
const PERIOD_NAMES: [&str; 2] = ["analysis_period_days", "lookback_days"];

/// Names of the computed variables (the period has two names).
pub const COMPUTED_VARIABLES: &[&str] = &[
    "today",
    "start_date",
    "end_date",
    "start_date_iso",
    "end_date_iso",
    "quarter",
    "analysis_period_days",
    "lookback_days",
];

/// The date `N` days before `now` (YYYY-MM-DD) for a variable named `<N>_days_ago`
/// (`90_days_ago`), `N` up to 36600; `None` for any other name.
pub fn days_ago_variable(name: &str, now: DateTime<Utc>) -> Option<String> {
    let days = days_ago_count(name)?;
    Some(iso_date((now - Duration::days(days)).date_naive()))
}

/// `N` of a computable `<N>_days_ago` name (N up to 36600).
pub fn days_ago_count(name: &str) -> Option<i64> {
    days_ago_digits(name)
        .filter(|n| n.len() <= 5)?
        .parse()
        .ok()
        .filter(|d| *d <= 36_600)
}

/// The digits `N` of a name shaped `<N>_days_ago`, whatever their value.
pub fn days_ago_digits(name: &str) -> Option<&str> {
    name.strip_suffix("_days_ago")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Where "now" comes from: the system clock, or a fixed instant (`--now`, `PROMPTD_NOW`, tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clock {
    fixed: Option<DateTime<Utc>>,
}

/// A `--now` value that is neither RFC 3339 nor a date.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid time `{value}`: expected RFC 3339 (2026-01-15T12:00:00Z) or a date (2026-01-15)")]
pub struct ClockError {
    pub value: String,
}

impl Clock {
    /// The real clock.
    pub fn system() -> Clock {
        Clock { fixed: None }
    }

    /// A frozen clock.
    pub fn fixed(at: DateTime<Utc>) -> Clock {
        Clock { fixed: Some(at) }
    }

    /// Parses `2026-01-15T12:00:00Z` (any offset) or `2026-01-15` (midnight UTC).
    pub fn parse(value: &str) -> Result<Clock, ClockError> {
        let v = value.trim();
        if let Ok(dt) = DateTime::parse_from_rfc3339(v) {
            return Ok(Clock::fixed(dt.with_timezone(&Utc)));
        }
        if let Ok(d) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
            return Ok(Clock::fixed(d.and_time(NaiveTime::MIN).and_utc()));
        }
        Err(ClockError {
            value: value.to_string(),
        })
    }

    /// `--now` if given, else `PROMPTD_NOW`, else the system clock.
    pub fn from_option(now: Option<&str>) -> Result<Clock, ClockError> {
        match now {
            Some(v) => Clock::parse(v),
            None => match std::env::var("PROMPTD_NOW") {
                Ok(v) if !v.trim().is_empty() => Clock::parse(&v),
                _ => Ok(Clock::system()),
            },
        }
    }

    /// The current instant.
    pub fn now(&self) -> DateTime<Utc> {
        self.fixed.unwrap_or_else(Utc::now)
    }

    /// Whether this clock is frozen.
    pub fn is_fixed(&self) -> bool {
        self.fixed.is_some()
    }
}

/// A value given for the analysis period that is not a number of days.
#[derive(Debug, Clone, thiserror::Error)]
#[error("expected a whole number of days between 0 and 36600, got {value}")]
pub struct InvalidPeriod {
    /// The name it was given under.
    pub name: &'static str,
    pub value: Value,
}

/// The computed layer of one render.
#[derive(Debug, Clone)]
pub struct ComputedLayer<S> {
    /// The computed variables, below every other layer.
    pub variables: Map<String, Value>,
    /// Computed variables whose value a higher layer chose: each holds over every layer, with
    /// the source of the layer that chose it.
    pub overrides: Vec<(String, Value, S)>,
}

/// The computed layer of a render at `now`. `layers` are the layers above it, highest first,
/// each with its source: the highest that sets the analysis period under either name sets it
/// (a layer's `analysis_period_days` before its `lookback_days`), and both names then carry it
/// with that layer's source; with none, it is [`DEFAULT_PERIOD_DAYS`] from `computed`. The date
/// range is computed for the period.
pub fn computed_layer<S: Copy>(
    now: DateTime<Utc>,
    layers: &[(&Map<String, Value>, S)],
    computed: S,
) -> Result<ComputedLayer<S>, InvalidPeriod> {
    let (days, source) = period(layers)?.unwrap_or((DEFAULT_PERIOD_DAYS, computed));
    Ok(ComputedLayer {
        variables: computed_variables(now, days),
        overrides: PERIOD_NAMES
            .iter()
            .map(|name| (name.to_string(), Value::from(days), source))
            .collect(),
    })
}

/// The analysis period in days and the source of the highest layer that sets it, if any.
fn period<S: Copy>(layers: &[(&Map<String, Value>, S)]) -> Result<Option<(i64, S)>, InvalidPeriod> {
    for (layer, source) in layers {
        for name in PERIOD_NAMES {
            if let Some(v) = layer.get(name) {
                let days = coerce(v, ArgType::Integer)
                    .ok()
                    .and_then(|v| v.as_i64())
                    .filter(|d| (0..=36_600).contains(d))
                    .ok_or_else(|| InvalidPeriod {
                        name,
                        value: v.clone(),
                    })?;
                return Ok(Some((days, *source)));
            }
        }
    }
    Ok(None)
}

/// `2026-01-15`: what `format("%Y-%m-%d")` writes, without parsing the format on every render
/// (chrono's strftime parser showed in `prompts/get` profiles).
fn iso_date(d: NaiveDate) -> String {
    if (0..=9999).contains(&d.year()) {
        format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
    } else {
        d.format("%Y-%m-%d").to_string()
    }
}

/// The computed variables for a period ending today. They depend on the day and the period
/// only: each thread keeps the last set it built and hands out copies while both stay the same
/// (formatting the dates was a thirtieth of a `prompts/get`).
pub fn computed_variables(now: DateTime<Utc>, period_days: i64) -> Map<String, Value> {
    type Last = Option<(NaiveDate, i64, Map<String, Value>)>;
    thread_local! {
        static LAST: std::cell::RefCell<Last> = const { std::cell::RefCell::new(None) };
    }
    let today = now.date_naive();
    LAST.with_borrow_mut(|last| match last {
        Some((day, days, variables)) if *day == today && *days == period_days => variables.clone(),
        _ => {
            let variables = variables_of_day(today, period_days);
            *last = Some((today, period_days, variables.clone()));
            variables
        }
    })
}

/// The computed variables of `today` for a period of `period_days`.
fn variables_of_day(today: NaiveDate, period_days: i64) -> Map<String, Value> {
    let start = today - Duration::days(period_days);
    let fmt = iso_date;
    let mut m = Map::new();
    m.insert("today".into(), Value::String(fmt(today)));
    m.insert("start_date".into(), Value::String(fmt(start)));
    m.insert("end_date".into(), Value::String(fmt(today)));
    m.insert(
        "start_date_iso".into(),
        Value::String(format!("{}T00:00:00Z", fmt(start))),
    );
    m.insert(
        "end_date_iso".into(),
        Value::String(format!("{}T23:59:59Z", fmt(today))),
    );
    m.insert(
        "quarter".into(),
        Value::String(format!("Q{}", (today.month() - 1) / 3 + 1)),
    );
    m.insert("analysis_period_days".into(), Value::from(period_days));
    m.insert("lookback_days".into(), Value::from(period_days));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_are_chronos() {
        for (y, m, d) in [
            (2026, 1, 5),
            (999, 12, 31),
            (0, 1, 1),
            (9999, 12, 31),
            (-1, 3, 4),
            (10000, 1, 1),
        ] {
            let date = NaiveDate::from_ymd_opt(y, m, d).unwrap();
            assert_eq!(iso_date(date), date.format("%Y-%m-%d").to_string());
        }
    }

    #[test]
    fn days_ago_names() {
        let now = DateTime::parse_from_rfc3339("2026-01-15T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            days_ago_variable("90_days_ago", now).as_deref(),
            Some("2025-10-17")
        );
        assert_eq!(
            days_ago_variable("0_days_ago", now).as_deref(),
            Some("2026-01-15")
        );
        assert_eq!(days_ago_variable("_days_ago", now), None);
        assert_eq!(days_ago_variable("x90_days_ago", now), None);
        assert_eq!(days_ago_variable("999999_days_ago", now), None);
        assert_eq!(days_ago_variable("today", now), None);
    }

    #[test]
    fn range_and_quarter() {
        let now = Clock::parse("2026-01-15T12:00:00Z").unwrap().now();
        let v = computed_variables(now, 30);
        assert_eq!(v["today"], "2026-01-15");
        assert_eq!(v["start_date"], "2025-12-16");
        assert_eq!(v["quarter"], "Q1");
        assert_eq!(v["start_date_iso"], "2025-12-16T00:00:00Z");
    }

    #[test]
    fn the_kept_set_follows_the_day_and_the_period() {
        let at = |t: &str| Clock::parse(t).unwrap().now();
        // The same day and period, then another period, another day, and back: each call
        // gives what a fresh build gives.
        for (t, days) in [
            ("2026-01-15T00:00:01Z", 30),
            ("2026-01-15T23:59:59Z", 30),
            ("2026-01-15T23:59:59Z", 7),
            ("2026-04-01T00:00:00Z", 7),
            ("2026-01-15T12:00:00Z", 30),
        ] {
            let now = at(t);
            assert_eq!(
                computed_variables(now, days),
                variables_of_day(now.date_naive(), days),
                "{t} {days}"
            );
        }
        assert_eq!(
            computed_variables(at("2026-04-01T00:00:00Z"), 7)["quarter"],
            "Q2"
        );
    }

    #[test]
    fn the_highest_layer_naming_the_period_sets_both_names() {
        let now = Clock::parse("2026-01-15T12:00:00Z").unwrap().now();
        let map = |v: serde_json::Value| v.as_object().unwrap().clone();
        let user = map(serde_json::json!({"lookback_days": "30"}));
        let default = map(serde_json::json!({"analysis_period_days": 7, "lookback_days": 14}));
        let config = map(serde_json::json!({"analysis_period_days": 60}));
        let overrides = |layer: &ComputedLayer<&'static str>| {
            layer
                .overrides
                .iter()
                .map(|(n, v, s)| (n.clone(), v.as_i64().unwrap(), *s))
                .collect::<Vec<_>>()
        };
        let both = |days: i64, source: &'static str| {
            vec![
                ("analysis_period_days".to_string(), days, source),
                ("lookback_days".to_string(), days, source),
            ]
        };

        // User over default over config; the string is coerced.
        let all = [(&user, "user"), (&default, "default"), (&config, "config")];
        let layer = computed_layer(now, &all, "computed").unwrap();
        assert_eq!(overrides(&layer), both(30, "user"));
        assert_eq!(layer.variables["start_date"], "2025-12-16");
        // Within a layer, `analysis_period_days` comes before `lookback_days`.
        let layer = computed_layer(now, &all[1..], "computed").unwrap();
        assert_eq!(overrides(&layer), both(7, "default"));
        let layer = computed_layer(now, &all[2..], "computed").unwrap();
        assert_eq!(overrides(&layer), both(60, "config"));
        // No layer: the default period, computed.
        let layer = computed_layer(now, &[], "computed").unwrap();
        assert_eq!(overrides(&layer), both(DEFAULT_PERIOD_DAYS, "computed"));
        assert_eq!(layer.variables["start_date"], "2025-10-17");

        let bad = map(serde_json::json!({"lookback_days": 40000}));
        let err = computed_layer(now, &[(&bad, "user"), (&user, "user")], "computed").unwrap_err();
        assert_eq!(err.name, "lookback_days");
        assert_eq!(
            err.to_string(),
            "expected a whole number of days between 0 and 36600, got 40000"
        );
    }

    #[test]
    fn parses_plain_dates_and_rejects_garbage() {
        assert!(Clock::parse("2026-11-22").unwrap().is_fixed());
        assert!(Clock::parse("yesterday").is_err());
    }
}
