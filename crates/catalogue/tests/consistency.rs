//! Every catalogue entry is a tool the policy knows, and shows the model every path argument
//! the policy checks, required exactly when the policy requires it.

use std::collections::BTreeSet;

use codaris_catalogue::{ALL, LOOP_TOOLS, entry};
use codaris_policy::PathDefault;
use pretty_assertions::assert_eq;
use serde_json::Value;

#[test]
fn names_are_unique_and_found_by_name() {
    let names: BTreeSet<&str> = ALL.iter().map(|e| e.name).collect();
    assert_eq!(names.len(), ALL.len());
    for listed in ALL {
        assert_eq!(entry(listed.name).map(|e| e.name), Some(listed.name));
    }
    assert!(entry("no_such_tool").is_none());
}

#[test]
fn every_entry_is_a_policy_builtin() {
    for listed in ALL {
        assert!(
            codaris_policy::builtin(listed.name).is_some(),
            "{} is not in codaris_policy's catalogue",
            listed.name
        );
    }
}

#[test]
fn the_always_on_surface_and_the_loop_tools_are_catalogued() {
    for name in codaris_policy::ALWAYS_ON {
        assert!(entry(name).is_some(), "{name} has no catalogue entry");
    }
    for tool in LOOP_TOOLS {
        assert!(
            codaris_policy::ALWAYS_ON.contains(&tool.name),
            "{} is a loop tool but not always on",
            tool.name
        );
    }
}

#[test]
fn schemas_show_every_path_argument_the_policy_checks() {
    for listed in ALL {
        let name = listed.name;
        let schema = listed.schema();
        assert_eq!(schema["type"], "object", "{name}");
        let Some(properties) = schema["properties"].as_object() else {
            panic!("{name}: the schema has no properties object");
        };
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for argument in &required {
            assert!(
                properties.contains_key(*argument),
                "{name}: `{argument}` is required but not a property"
            );
        }
        let Some(spec) = codaris_policy::builtin(name) else {
            panic!("{name} is not in codaris_policy's catalogue");
        };
        for path in spec.paths.iter() {
            let argument: &str = &path.name;
            assert!(
                properties.contains_key(argument),
                "{name}: no `{argument}` in the schema"
            );
            assert_eq!(
                required.contains(&argument),
                path.default == PathDefault::Required,
                "{name}: `{argument}` required?"
            );
        }
    }
}
