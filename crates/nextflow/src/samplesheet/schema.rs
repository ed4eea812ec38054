//! The samplesheet schema: loaded, checked the way nf-schema checks it, and read for the
//! parts the gate needs outside the JSON Schema validator (property order, uniqueness).

use std::path::Path;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::error::GateError;

/// The one draft nf-schema accepts.
pub(crate) const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The formats nf-schema checks on the file system.
pub(crate) const PATH_FORMATS: [&str; 4] =
    ["file-path", "directory-path", "path", "file-path-pattern"];

/// What the gate reads from a samplesheet schema besides handing it to the validator.
#[derive(Debug)]
pub(crate) struct SheetSchema {
    pub value: Value,
    /// `items.properties` names in the order the schema writes them.
    pub property_order: Vec<String>,
    /// `uniqueEntries` at the top, then one list per field marked `unique`.
    pub unique_sets: Vec<UniqueSet>,
    /// Fields whose type is `array` or `object`, which CSV/TSV cannot carry.
    pub nested_fields: Vec<String>,
    /// Fields with one of nf-schema's path formats.
    pub path_fields: Vec<String>,
}

/// Fields whose combined values must not repeat across entries.
#[derive(Debug, Clone)]
pub(crate) struct UniqueSet {
    pub fields: Vec<String>,
    /// The `errorMessage` beside the keyword, appended as nf-schema appends it.
    pub custom: Option<String>,
}

impl SheetSchema {
    pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Self, GateError> {
        let json_error = |e: serde_json::Error| GateError::SchemaJson {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let value: Value = serde_json::from_slice(bytes).map_err(json_error)?;
        let order: OrderProbe = serde_json::from_slice(bytes).map_err(json_error)?;
        let draft = value.get("$schema").and_then(Value::as_str).unwrap_or("");
        if draft != DRAFT_2020_12 {
            return Err(GateError::SchemaDraft {
                path: path.to_path_buf(),
                draft: if draft.is_empty() {
                    "none".to_owned()
                } else {
                    draft.to_owned()
                },
            });
        }
        let Some(top) = value.as_object() else {
            return Err(GateError::SchemaShape {
                path: path.to_path_buf(),
            });
        };
        if top.contains_key("properties") || !top.contains_key("items") {
            return Err(GateError::SchemaShape {
                path: path.to_path_buf(),
            });
        }
        let properties = value
            .pointer("/items/properties")
            .and_then(Value::as_object);
        let mut unique_sets = Vec::new();
        if let Some(fields) = top.get("uniqueEntries").and_then(Value::as_array) {
            unique_sets.push(UniqueSet {
                fields: fields
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                custom: top
                    .get("errorMessage")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        let property_order = order
            .items
            .and_then(|i| i.properties)
            .map(|p| p.0)
            .unwrap_or_default();
        let mut nested_fields = Vec::new();
        let mut path_fields = Vec::new();
        for name in &property_order {
            let Some(prop) = properties.and_then(|p| p.get(name)) else {
                continue;
            };
            if matches!(
                prop.get("type").and_then(Value::as_str),
                Some("array" | "object")
            ) {
                nested_fields.push(name.clone());
            }
            if prop
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| PATH_FORMATS.contains(&f))
            {
                path_fields.push(name.clone());
            }
            // nf-validation's per-field `unique`: `true`, or a list of fields it is unique
            // together with. nf-schema replaced it by `uniqueEntries`; both are honoured.
            let with: Option<Vec<String>> = match prop.get("unique") {
                Some(Value::Bool(true)) => Some(Vec::new()),
                Some(Value::Array(others)) => Some(
                    others
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                ),
                _ => None,
            };
            if let Some(with) = with {
                let mut fields = vec![name.clone()];
                fields.extend(with.into_iter().filter(|f| f != name));
                unique_sets.push(UniqueSet {
                    fields,
                    custom: prop
                        .get("errorMessage")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                });
            }
        }
        Ok(SheetSchema {
            value,
            property_order,
            unique_sets,
            nested_fields,
            path_fields,
        })
    }

    /// Whether `name` is a column the schema knows.
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.property_order.iter().any(|p| p == name)
    }

    /// The position of a field in the schema, for ordering errors as the schema reads.
    pub(crate) fn field_rank(&self, name: &str) -> usize {
        self.property_order
            .iter()
            .position(|p| p == name)
            .unwrap_or(self.property_order.len())
    }
}

/// The schema once more, for the order of `items.properties`: `serde_json`'s maps here are
/// sorted, and errors should follow the order the pipeline's author wrote.
#[derive(Deserialize)]
struct OrderProbe {
    items: Option<ItemsProbe>,
}

#[derive(Deserialize)]
struct ItemsProbe {
    properties: Option<OrderedKeys>,
}

struct OrderedKeys(Vec<String>);

impl<'de> Deserialize<'de> for OrderedKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = OrderedKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedKeys, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<IgnoredAny>()?;
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
                Ok(OrderedKeys(keys))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// A copy of the schema for the validator, with a marker keyword beside every path format
/// and `exists`, so one custom keyword sees `format` and `exists` together (the factory is
/// handed the subschema the keyword sits in).
pub(crate) fn with_path_markers(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out: serde_json::Map<String, Value> = map
                .iter()
                .map(|(k, v)| (k.clone(), with_path_markers(v)))
                .collect();
            let path_format = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| PATH_FORMATS.contains(&f));
            let exists = map.get("exists").is_some_and(Value::is_boolean);
            if path_format || exists {
                out.insert(super::keywords::PATH_KEYWORD.to_owned(), Value::Bool(true));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(with_path_markers).collect()),
        other => other.clone(),
    }
}
