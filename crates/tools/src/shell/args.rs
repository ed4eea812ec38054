//! Reading the model's arguments: wrong shapes are the model's to fix.

use serde_json::Value;

use crate::tool::ToolError;

pub(crate) fn string<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolError::model(format!("`{name}` must be a string"))),
    }
}

pub(crate) fn required_string<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    string(args, name)?
        .filter(|text| !text.trim().is_empty())
        .ok_or_else(|| ToolError::model(format!("`{name}` is required")))
}

pub(crate) fn boolean(args: &Value, name: &str, default: bool) -> Result<bool, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(_) => Err(ToolError::model(format!("`{name}` must be true or false"))),
    }
}

/// A non-negative whole number; a float is accepted if it is whole or rounded up, since
/// models write `30.0` as readily as `30`.
pub(crate) fn count(args: &Value, name: &str) -> Result<Option<u64>, ToolError> {
    let wrong = || ToolError::model(format!("`{name}` must be a non-negative number"));
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => match (number.as_u64(), number.as_f64()) {
            (Some(whole), _) => Ok(Some(whole)),
            (None, Some(float)) if float.is_finite() && float >= 0.0 => {
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "checked finite and non-negative; saturates at u64::MAX"
                )]
                let whole = float.ceil() as u64;
                Ok(Some(whole))
            }
            _ => Err(wrong()),
        },
        Some(_) => Err(wrong()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_shapes_and_refuses_wrong_ones() {
        let args = json!({"s": "x", "b": true, "n": 3, "f": 2.5, "neg": -1, "empty": " "});
        assert_eq!(string(&args, "s").ok().flatten(), Some("x"));
        assert!(string(&args, "b").is_err());
        assert!(required_string(&args, "missing").is_err());
        assert!(required_string(&args, "empty").is_err());
        assert_eq!(boolean(&args, "b", false).ok(), Some(true));
        assert_eq!(boolean(&args, "missing", true).ok(), Some(true));
        assert_eq!(count(&args, "n").ok().flatten(), Some(3));
        assert_eq!(count(&args, "f").ok().flatten(), Some(3));
        assert!(count(&args, "neg").is_err());
        assert!(count(&args, "s").is_err());
    }
}
