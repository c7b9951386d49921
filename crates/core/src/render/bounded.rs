//! Bounded versions of minijinja's built-in filters that can build a value much larger than
//! their input (`replace`, `indent`, `join`, `format`, `tojson`, `pprint`, `string`).
//!
//! Each computes an upper bound of its result's size first and refuses, through
//! [`minijinja::check_value_size`], to build anything over the value size limit the renderer
//! sets for the render; then it hands over to the built-in filter, so output is unchanged.
//! Without a limit set (outside a render) they behave exactly as the built-ins.

use minijinja::value::{Kwargs, Rest, StringInput, ValueKind, ValueOrKwargs};
use minijinja::{
    Environment, Error, State, Value, check_value_size, filters, to_string_limited,
    value_size_limit,
};

/// Replaces the amplifying built-in filters of `env` with their bounded versions.
pub fn add_bounded_filters(env: &mut Environment<'_>) {
    env.add_filter("replace", replace);
    env.add_filter("indent", indent);
    env.add_filter("join", join);
    env.add_filter("format", format);
    env.add_filter("tojson", tojson);
    env.add_filter("pprint", pprint);
    env.add_filter("string", string);
}

/// The display length of a value, within the value size limit.
fn display_len(value: &Value) -> Result<usize, Error> {
    match value.as_str() {
        Some(s) => Ok(s.len()),
        None => to_string_limited(value).map(|s| s.len()),
    }
}

fn replace(
    state: &mut State,
    value: StringInput<'_>,
    from: StringInput<'_>,
    to: StringInput<'_>,
) -> Result<Value, Error> {
    let s = value.as_str();
    let hits = if from.as_str().is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(from.as_str()).count()
    };
    // `to` may be HTML-escaped on the way (at most 6 bytes per byte).
    check_value_size(
        s.len()
            .saturating_add(hits.saturating_mul(to.as_str().len() * 6)),
    )?;
    filters::replace(state, value, from, to)
}

fn indent(
    value: StringInput<'_>,
    width: Option<usize>,
    first: Option<bool>,
    blank: Option<bool>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let lines = value.as_str().lines().count() + 1;
    let width_bound = match width {
        Some(w) => w,
        None => kwargs.get::<Option<usize>>("width")?.unwrap_or(4),
    };
    check_value_size(
        value
            .as_str()
            .len()
            .saturating_add(lines.saturating_mul(width_bound.saturating_add(1))),
    )?;
    filters::indent(value, width, first, blank, kwargs)
}

fn join(
    state: &mut State,
    value: &Value,
    joiner: Option<StringInput<'_>>,
    attribute: Option<&str>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    if let Ok(items) = value.try_iter() {
        let joiner_len = match &joiner {
            Some(j) => j.as_str().len(),
            None => kwargs
                .get::<Option<StringInput<'_>>>("d")?
                .map_or(0, |j| j.as_str().len()),
        };
        let mut bound = 0usize;
        for item in items {
            // An item's escaped form is at most 6 bytes per byte.
            bound = bound.saturating_add(display_len(&item)?.saturating_mul(6) + joiner_len);
            check_value_size(bound)?;
        }
    }
    filters::join(state, value, joiner, attribute, kwargs)
}

fn format(
    state: &mut State,
    format_str: &Value,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    if let Some(fmt) = format_str.as_str() {
        let conversions = fmt.matches('%').count();
        // Widths and precisions are the format string's digit runs.
        let widest = fmt
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|d| d.parse::<usize>().ok())
            .max()
            .unwrap_or(0);
        let mut longest = 0usize;
        for arg in args.iter() {
            longest = longest.max(display_len(arg)?);
        }
        let per = longest
            .saturating_mul(6)
            .saturating_add(widest)
            .saturating_add(64);
        check_value_size(fmt.len().saturating_add(conversions.saturating_mul(per)))?;
    }
    filters::format(state, format_str, args)
}

/// An upper bound of the pretty-printed (JSON or Debug) size of a value with `indent` spaces
/// per level, stopping as soon as it passes `stop`.
fn pretty_bound(value: &Value, indent: usize, depth: usize, stop: usize) -> Result<usize, Error> {
    let line = depth
        .saturating_add(1)
        .saturating_mul(indent)
        .saturating_add(8);
    match value.kind() {
        ValueKind::String => Ok(value.as_str().map_or(0, str::len).saturating_mul(6) + 2),
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map => {
            let mut total = line;
            let map = value.kind() == ValueKind::Map;
            for item in value.try_iter()? {
                total = total.saturating_add(line);
                if map {
                    total = total.saturating_add(pretty_bound(&item, indent, depth + 1, stop)?);
                    let v = value.get_item(&item).unwrap_or_default();
                    total = total.saturating_add(pretty_bound(&v, indent, depth + 1, stop)?);
                } else {
                    total = total.saturating_add(pretty_bound(&item, indent, depth + 1, stop)?);
                }
                if total > stop {
                    return Ok(total);
                }
            }
            Ok(total)
        }
        _ => Ok(display_len(value)?.saturating_mul(6) + 64),
    }
}

/// Checks the pretty-printed size bound of a value against the value size limit.
fn check_pretty(value: &Value, indent: usize) -> Result<(), Error> {
    match value_size_limit() {
        Some(limit) => check_value_size(pretty_bound(value, indent, 0, limit.max_value)?),
        None => Ok(()),
    }
}

fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let width = match &indent {
        Some(v) => v.clone(),
        None => kwargs.get::<Option<Value>>("indent")?.unwrap_or_default(),
    };
    let width = match width.kind() {
        ValueKind::Bool => 2 * usize::from(width.is_true()),
        ValueKind::Number => usize::try_from(width).unwrap_or(usize::MAX),
        _ => 1,
    };
    check_pretty(value, width)?;
    filters::tojson(value, indent, kwargs)
}

fn pprint(value: &Value) -> Result<String, Error> {
    check_pretty(value, 4)?;
    Ok(filters::pprint(value))
}

fn string(state: &State, value: &Value) -> Result<Value, Error> {
    match value.kind() {
        ValueKind::String | ValueKind::Undefined => filters::string(state, value),
        _ => to_string_limited(value).map(Value::from),
    }
}
