//! The vocabulary documented in `docs/decision-codes.md` is the crate's vocabulary.

use codaris_policy::{BUILTIN, CapabilityName, Code, ToolSpec};

const DOC: &str = include_str!("../../../docs/decision-codes.md");

#[test]
fn every_code_has_a_row_with_its_verdict() {
    for code in Code::ALL {
        let row = DOC
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", code.as_str())))
            .unwrap_or_else(|| panic!("no table row for {code}"));
        assert!(
            row.contains(&format!("| {} |", code.verdict().as_str())),
            "{row}"
        );
    }
}

#[test]
fn every_capability_is_documented() {
    for name in CapabilityName::ALL {
        assert!(DOC.contains(&format!("`{}`", name.as_str())), "{name}");
    }
}

/// The wire name of an enum value.
fn wire(value: impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The documentation's row for a built-in tool, generated from the data.
fn tool_row(spec: &ToolSpec) -> String {
    let paths: Vec<String> = spec
        .paths
        .iter()
        .map(|p| format!("`{}` ({}, {})", p.name, wire(p.access), wire(p.default)))
        .collect();
    let modes: Vec<&str> = spec.modes.to_vec().iter().map(|m| m.as_str()).collect();
    let mut gate: Vec<String> = Vec::new();
    if !spec.slash.is_empty() {
        let slash: Vec<String> = spec.slash.iter().map(|s| format!("`{s}`")).collect();
        gate.push(format!("slash {}", slash.join(" ")));
    }
    if let Some(arg) = spec.report_only {
        gate.push(format!("`{arg}: true` lifts it"));
    }
    if let Some(w) = spec.withheld_when {
        gate.push(format!("withheld: {}", wire(w)));
    }
    let or_dash = |v: Vec<String>, sep: &str| {
        if v.is_empty() {
            "—".to_owned()
        } else {
            v.join(sep)
        }
    };
    format!(
        "| `{}` | {} | {} | {} | {} | {} |",
        spec.name,
        wire(spec.class),
        wire(spec.effect),
        or_dash(paths, ", "),
        if modes.is_empty() {
            "—".to_owned()
        } else {
            modes.join(", ")
        },
        or_dash(gate, "; "),
    )
}

#[test]
fn the_tool_table_matches_the_catalogue() {
    let missing: Vec<String> = BUILTIN
        .iter()
        .map(tool_row)
        .filter(|row| !DOC.lines().any(|l| l == row))
        .collect();
    assert!(
        missing.is_empty(),
        "rows missing or stale:\n{}",
        missing.join("\n")
    );
}
