//! Built-in tools as the model is shown them: specs made from `codaris-catalogue`, including
//! the tools the turn loop answers itself.

use codaris_catalogue::CatalogueEntry;

use crate::provider::{ToolDefinition, ToolTier};

/// The spec of the built-in tool `name` (a loop tool or one the daemon runs), from the
/// catalogue; always-on exactly when it is one of the always-on nine. The caller decides
/// whether it is offered (the daemon only names tools it registered).
pub fn catalogue_spec(name: &str) -> Option<ToolDefinition> {
    codaris_catalogue::entry(name).map(spec_of)
}

/// `search_tools`, `request_capability` and `compact_context`, by name.
pub fn loop_tool_spec(name: &str) -> Option<ToolDefinition> {
    codaris_catalogue::LOOP_TOOLS
        .iter()
        .find(|entry| entry.name == name)
        .map(spec_of)
}

fn spec_of(entry: &CatalogueEntry) -> ToolDefinition {
    ToolDefinition {
        name: entry.name.to_owned(),
        description: entry.description.to_owned(),
        input_schema: entry.schema(),
        tier: if codaris_policy::ALWAYS_ON.contains(&entry.name) {
            ToolTier::AlwaysOn
        } else {
            ToolTier::Added
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_tools_are_always_on_and_nothing_else_is_one() {
        for name in ["search_tools", "request_capability"] {
            assert_eq!(
                loop_tool_spec(name).map(|spec| spec.tier),
                Some(ToolTier::AlwaysOn)
            );
        }
        assert!(loop_tool_spec("read_file").is_none());
        assert_eq!(
            catalogue_spec("read_file").map(|spec| spec.tier),
            Some(ToolTier::AlwaysOn)
        );
        assert_eq!(
            catalogue_spec("webfetch").map(|spec| spec.tier),
            Some(ToolTier::Added)
        );
        assert!(catalogue_spec("no_such_tool").is_none());
    }
}
