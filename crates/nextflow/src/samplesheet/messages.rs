//! The `jsonschema` crate's errors, reworded as nf-schema's validator (harrel json-schema)
//! words them, with the schema's `errorMessage` appended where nf-schema appends it.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use super::report::{Finding, shorten_value};

/// What the translator needs to know about the sheet and the schema.
pub(crate) struct Context<'a> {
    /// The original schema (for `errorMessage`).
    pub schema: &'a Value,
    /// The instance that was validated.
    pub instance: &'a Value,
    /// For CSV/TSV: the converted cells as written.
    pub written: &'a [super::read::Written],
}

/// A translated error before `required` errors of one entry are merged.
struct Draft {
    finding: Finding,
    /// For `required` and `dependentRequired`: the missing property, to be merged.
    missing: Option<(bool, String)>,
}

/// Translates every error, merging the one-per-property `required` errors the crate yields
/// into nf-schema's single "Missing required field(s): a, b".
pub(crate) fn translate_all<'e>(
    errors: impl Iterator<Item = ValidationError<'e>>,
    ctx: &Context<'_>,
) -> Vec<Finding> {
    let mut drafts = Vec::new();
    for error in errors {
        translate(&error, ctx, &mut drafts);
    }
    let mut out: Vec<Finding> = Vec::new();
    let mut open: Option<(bool, Vec<String>, Finding)> = None;
    let close = |open: &mut Option<(bool, Vec<String>, Finding)>, out: &mut Vec<Finding>| {
        if let Some((dependent, names, mut finding)) = open.take() {
            finding.message = if dependent {
                format!(
                    "Object does not have some of the required properties [{}]",
                    names.join(", ")
                )
            } else {
                format!("Missing required field(s): {}", names.join(", "))
            };
            out.push(finding);
        }
    };
    for draft in drafts {
        match draft.missing {
            Some((dependent, name)) => {
                let same = open.as_ref().is_some_and(|(d, _, f)| {
                    *d == dependent
                        && f.entry == draft.finding.entry
                        && f.field == draft.finding.field
                });
                if same {
                    if let Some((_, names, _)) = open.as_mut()
                        && !names.contains(&name)
                    {
                        names.push(name);
                    }
                } else {
                    close(&mut open, &mut out);
                    open = Some((dependent, vec![name], draft.finding));
                }
            }
            None => {
                close(&mut open, &mut out);
                out.push(draft.finding);
            }
        }
    }
    close(&mut open, &mut out);
    out
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

fn translate(error: &ValidationError<'_>, ctx: &Context<'_>, out: &mut Vec<Draft>) {
    let instance_segments: Vec<String> = error
        .instance_path()
        .as_str()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(unescape)
        .collect();
    let schema_segments: Vec<String> = error
        .schema_path()
        .as_str()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(unescape)
        .collect();
    let kind = error.kind();
    // Branch errors first, as nf-schema lists them before the `anyOf`/`oneOf` error itself.
    if let ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } =
        kind
    {
        for branch in context {
            for inner in branch {
                translate(inner, ctx, out);
            }
        }
    }
    if let ValidationErrorKind::AdditionalProperties { unexpected } = kind {
        for name in unexpected {
            let mut segments = instance_segments.clone();
            segments.push(name.clone());
            out.push(Draft {
                finding: finding_at(&segments, ctx, "False schema always fails".into(), None),
                missing: None,
            });
        }
        return;
    }
    let keyword = kind.keyword().to_owned();
    let dependent = schema_segments.iter().any(|s| s == "dependentRequired");
    let keyword_at = if dependent && matches!(kind, ValidationErrorKind::Required { .. }) {
        schema_segments
            .iter()
            .rposition(|s| s == "dependentRequired")
    } else {
        schema_segments.iter().rposition(|s| *s == keyword)
    };
    let parent = &schema_segments[..keyword_at.unwrap_or(schema_segments.len().saturating_sub(1))];
    let custom = custom_message(ctx.schema, parent);
    let instance = error.instance();
    let missing = match kind {
        ValidationErrorKind::Required { property } => Some((
            dependent,
            property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned),
        )),
        _ => None,
    };
    let message = match kind {
        ValidationErrorKind::Required { .. } => String::new(),
        other => message_for(other, instance, error),
    };
    out.push(Draft {
        finding: finding_at(&instance_segments, ctx, message, custom),
        missing,
    });
}

fn finding_at(
    segments: &[String],
    ctx: &Context<'_>,
    message: String,
    custom: Option<String>,
) -> Finding {
    let entry = segments.first().and_then(|s| s.parse::<usize>().ok());
    let field = match (entry, segments.len()) {
        (Some(_), n) if n > 1 => Some(segments[1..].join("/")),
        _ => None,
    };
    let value = field
        .as_ref()
        .map(|_| shorten_value(&quoted_value(segments, ctx)));
    Finding {
        entry: entry.map(|i| i + 1),
        field,
        value,
        message,
        custom,
    }
}

/// The value at `segments` as nf-schema quotes it: a CSV/TSV cell as written, else the
/// value's text.
fn quoted_value(segments: &[String], ctx: &Context<'_>) -> String {
    if let [index, field] = segments
        && let Some(text) = index
            .parse::<usize>()
            .ok()
            .and_then(|i| super::read::written_text(ctx.written, i, field))
    {
        return text.to_owned();
    }
    let mut value = ctx.instance;
    for segment in segments {
        let next = match value {
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            Value::Object(map) => map.get(segment),
            _ => None,
        };
        match next {
            Some(v) => value = v,
            None => return String::new(),
        }
    }
    printable(value)
}

/// How harrel prints a value inside a message: strings bare, the rest as JSON.
fn printable(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(printable).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn custom_message(schema: &Value, parent: &[String]) -> Option<String> {
    let mut node = schema;
    for segment in parent {
        node = match node {
            Value::Object(map) => map.get(segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    node.get("errorMessage")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
}

fn message_for(
    kind: &ValidationErrorKind,
    instance: &Value,
    error: &ValidationError<'_>,
) -> String {
    let text = printable(instance);
    match kind {
        ValidationErrorKind::Pattern { pattern } => {
            format!("\"{text}\" does not match regular expression {pattern}")
        }
        ValidationErrorKind::Enum { options } => format!("Expected any of {}", printable(options)),
        ValidationErrorKind::Constant { expected_value } => {
            format!("Expected {}", printable(expected_value))
        }
        ValidationErrorKind::MinLength { limit } => {
            format!("\"{text}\" is shorter than {limit} characters")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("\"{text}\" is longer than {limit} characters")
        }
        ValidationErrorKind::Minimum { limit } => format!("{text} is less than {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("{text} is greater than {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("{text} is less than or equal to {limit}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("{text} is greater than or equal to {limit}")
        }
        ValidationErrorKind::MinItems { limit } => format!("Array has less than {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("Array has more than {limit} items"),
        ValidationErrorKind::MinProperties { limit } => {
            format!("Object has less than {limit} properties")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("Object has more than {limit} properties")
        }
        ValidationErrorKind::UniqueItems => "Array contains non-unique items".into(),
        ValidationErrorKind::Contains => "Array contains no matching items".into(),
        ValidationErrorKind::Not { .. } => {
            "Value matches against given schema but it must not".into()
        }
        ValidationErrorKind::FalseSchema => "False schema always fails".into(),
        ValidationErrorKind::Format { format } => {
            format!("\"{text}\" is not in the valid format ({format})")
        }
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            "Value does not match against any of the schemas".into()
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "Value matches against more than one schema".into()
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(ts) => ts
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            format!(
                "Value is [{}] but should be [{expected}]",
                super::read::type_name(instance)
            )
        }
        ValidationErrorKind::Custom { message, .. } => message.clone(),
        _ => error.to_string(),
    }
}
