//! Argument coercion: a supplied value converted to the type its argument declares (MCP sends
//! every argument as a string).

use serde_json::Value;

use crate::registry::ArgType;

/// Converts a supplied value to the declared type (MCP sends every argument as a string).
pub fn coerce(value: &Value, ty: ArgType) -> Result<Value, String> {
    let got = || format!("got {value}");
    match (ty, value) {
        (ArgType::String, Value::String(_)) => Ok(value.clone()),
        (ArgType::String, Value::Number(_) | Value::Bool(_)) => {
            Ok(Value::String(value.to_string()))
        }
        (ArgType::Integer, Value::Number(n)) => n
            .as_i64()
            .map(Value::from)
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| Value::from(f as i64))
            })
            .ok_or_else(|| format!("expected an integer, {}", got())),
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
