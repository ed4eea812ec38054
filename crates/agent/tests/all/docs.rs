//! `docs/surface.md` names every command, every forced tool and every end reason it documents.

use codaris_agent::{
    AUDIT_TOOLS, Command, EXTENSION_TOOLS, EndReason, REMEDIATE_TOOLS, REPAIR_TOOLS,
    RESEARCH_TOOLS, REVIEW_TOOLS, RUN_TOOLS, SEARCH_DATA_TOOLS,
};

const DOC: &str = include_str!("../../../../docs/surface.md");

#[test]
fn the_table_and_the_vocabulary_are_documented() {
    for command in Command::ALL {
        assert!(
            DOC.contains(&format!("`{}", command.as_str())),
            "{command:?}"
        );
    }
    let rows: [&[codaris_agent::BuiltinTool]; 8] = [
        &AUDIT_TOOLS,
        &REVIEW_TOOLS,
        &REMEDIATE_TOOLS,
        &SEARCH_DATA_TOOLS,
        &EXTENSION_TOOLS,
        &RUN_TOOLS,
        &REPAIR_TOOLS,
        &RESEARCH_TOOLS,
    ];
    for name in rows.iter().flat_map(|r| r.iter()) {
        assert!(DOC.contains(&format!("`{name}`")), "{name}");
    }
    for reason in EndReason::ALL {
        assert!(DOC.contains(&format!("`{}`", reason.as_str())), "{reason}");
    }
    for code in ["`repeated_search`", "`no_progress`"] {
        assert!(DOC.contains(code), "{code}");
    }
}
