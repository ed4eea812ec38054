//! The custom keywords that give the `jsonschema` validator nf-schema's semantics.

use std::sync::Arc;

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

use super::paths::PathChecker;
use super::read::type_name;

/// A compiled keyword, as a factory hands it to the validator.
type Boxed = Box<dyn for<'i> Keyword<'i>>;
/// What a factory returns.
type Built<'a> = Result<Boxed, ValidationError<'a>>;

/// The marker [`super::schema::with_path_markers`] puts beside a path format or `exists`.
pub(crate) const PATH_KEYWORD: &str = "x-codaris-nf-path";

/// nf-schema's `type`: the standard check with harrel's wording ("Value is [integer] but
/// should be [string]"); in lenient mode (`validation.lenientMode`) a string type also takes
/// any scalar.
struct TypeKeyword {
    types: Vec<String>,
    lenient: bool,
}

impl TypeKeyword {
    fn accepts(&self, instance: &Value) -> bool {
        let actual = type_name(instance);
        let has = |t: &str| self.types.iter().any(|x| x == t);
        if has(actual) || (actual == "integer" && has("number")) {
            return true;
        }
        self.lenient && has("string") && !matches!(instance, Value::Array(_) | Value::Object(_))
    }
}

impl<'i> Keyword<'i> for TypeKeyword {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        if self.accepts(instance) {
            Ok(())
        } else {
            Err(ValidationError::custom(format!(
                "Value is [{}] but should be [{}]",
                type_name(instance),
                self.types.join(", ")
            )))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.accepts(instance)
    }
}

/// The factory for `type`.
pub(crate) fn type_factory(
    lenient: bool,
) -> impl for<'a> Fn(&'a Map<String, Value>, &'a Value, Location) -> Built<'a> + Send + Sync + 'static
{
    move |_parent, value, _location| {
        let types: Vec<String> = match value {
            Value::String(t) => vec![t.clone()],
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => {
                return Err(ValidationError::schema(
                    "`type` must be a string or a list of strings",
                ));
            }
        };
        Ok(Box::new(TypeKeyword { types, lenient }) as Boxed)
    }
}

/// nf-schema's path formats and `exists`, on the subschema that carries them.
struct PathKeyword {
    format: Option<String>,
    exists: Option<bool>,
    checker: Arc<PathChecker>,
}

impl PathKeyword {
    fn failures(&self, instance: &Value) -> Vec<String> {
        match instance {
            // Like every nf-schema evaluator, only strings are checked.
            Value::String(s) => self.checker.check(s, self.format.as_deref(), self.exists),
            _ => Vec::new(),
        }
    }
}

impl<'i> Keyword<'i> for PathKeyword {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.failures(instance).into_iter().next() {
            Some(message) => Err(ValidationError::custom(message)),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.failures(instance).is_empty()
    }

    fn iter_errors(
        &self,
        instance: &'i Value,
    ) -> Box<dyn Iterator<Item = ValidationError<'i>> + 'i> {
        Box::new(
            self.failures(instance)
                .into_iter()
                .map(|message| -> ValidationError<'i> { ValidationError::custom(message) }),
        )
    }
}

/// The factory for the path marker.
pub(crate) fn path_factory(
    checker: Arc<PathChecker>,
) -> impl for<'a> Fn(&'a Map<String, Value>, &'a Value, Location) -> Built<'a> + Send + Sync + 'static
{
    move |parent, _value, _location| {
        let format = parent
            .get("format")
            .and_then(Value::as_str)
            .filter(|f| super::schema::PATH_FORMATS.contains(f))
            .map(str::to_owned);
        let exists = parent.get("exists").and_then(Value::as_bool);
        Ok(Box::new(PathKeyword {
            format,
            exists,
            checker: Arc::clone(&checker),
        }) as Boxed)
    }
}
