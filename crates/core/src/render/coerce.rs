//! Argument coercion: a supplied value converted to the type its argument declares (MCP sends
//! every argument as a string).

use serde_json::Value;

use crate::registry::ArgType;

/// 2^63: every whole float in `-I64_BOUND..I64_BOUND` is an `i64`.
const I64_BOUND: f64 = 9_223_372_036_854_775_808.0;

/// Converts a supplied value to the declared type (MCP sends every argument as a string).
pub fn coerce(value: &Value, ty: ArgType) -> Result<Value, String> {
    let got = || format!("got {value}");
    match (ty, value) {
        (ArgType::String, Value::String(_)) => Ok(value.clone()),
        (ArgType::String, Value::Number(_) | Value::Bool(_)) => {
            Ok(Value::String(value.to_string()))
        }
        (ArgType::Integer, Value::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Value::from(i)),
            None => match n.as_f64().filter(|f| f.fract() == 0.0) {
                // A whole number of a float: taken only where an i64 holds it exactly (a cast
                // would saturate 1e300 to i64::MAX).
                Some(f) if (-I64_BOUND..I64_BOUND).contains(&f) => Ok(Value::from(f as i64)),
                Some(_) => Err(format!(
                    "expected an integer from -2^63 to 2^63-1, {}",
                    got()
                )),
                None => Err(format!("expected an integer, {}", got())),
            },
        },
        (ArgType::Integer, Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("expected an integer, {}", got())),
        (ArgType::Number, Value::Number(_)) => Ok(value.clone()),
        (ArgType::Number, Value::String(s)) if s.trim().parse::<i64>().is_ok() => {
            Ok(Value::from(s.trim().parse::<i64>().expect("checked")))
        }
        (ArgType::Number, Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("expected a number, {}", got())),
        (ArgType::Boolean, Value::Bool(_)) => Ok(value.clone()),
        (ArgType::Boolean, Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" | "on" => Ok(Value::Bool(true)),
            "false" | "no" | "0" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("expected true or false, {}", got())),
        },
        (ArgType::Array, Value::Array(_)) | (ArgType::Object, Value::Object(_)) => {
            Ok(value.clone())
        }
        (ArgType::Array, Value::String(s)) => {
            let t = s.trim();
            if t.starts_with('[') {
                match serde_json::from_str::<Value>(t) {
                    Ok(v @ Value::Array(_)) => Ok(v),
                    _ => Err(format!("expected a JSON array, {}", got())),
                }
            } else if t.is_empty() {
                Ok(Value::Array(Vec::new()))
            } else {
                Ok(Value::Array(
                    t.split(',')
                        .map(|p| Value::String(p.trim().to_string()))
                        .collect(),
                ))
            }
        }
        (ArgType::Object, Value::String(s)) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err(format!("expected a JSON object, {}", got())),
        },
        (t, _) => Err(format!("expected {} {}, {}", article(t), t.as_str(), got())),
    }
}

fn article(t: ArgType) -> &'static str {
    match t {
        ArgType::Integer | ArgType::Array | ArgType::Object => "an",
        _ => "a",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_floats_outside_i64_are_refused_not_saturated() {
        let int = |v: Value| coerce(&v, ArgType::Integer);
        assert_eq!(int(serde_json::json!(3.0)), Ok(Value::from(3)));
        assert_eq!(
            int(serde_json::json!(-4e18)),
            Ok(Value::from(-4_000_000_000_000_000_000_i64))
        );
        for v in [
            serde_json::json!(1e300),
            serde_json::json!(-1e300),
            serde_json::json!(9.3e18),
            serde_json::json!(18_446_744_073_709_551_615_u64),
        ] {
            let e = int(v.clone()).unwrap_err();
            assert!(e.contains("from -2^63 to 2^63-1"), "{v}: {e}");
        }
        assert!(int(serde_json::json!(1.5)).is_err());
    }

    #[test]
    fn coercion() {
        assert_eq!(
            coerce(&"30".into(), ArgType::Integer).unwrap(),
            Value::from(30)
        );
        assert_eq!(
            coerce(&"no".into(), ArgType::Boolean).unwrap(),
            Value::Bool(false)
        );
        assert_eq!(
            coerce(&"a, b".into(), ArgType::Array).unwrap(),
            serde_json::json!(["a", "b"])
        );
        assert!(
            coerce(&"x".into(), ArgType::Integer)
                .unwrap_err()
                .contains("integer")
        );
    }
}
