//! Invariants of the surface over generated histories and turn states.

use codaris_agent::{Event, MAX_FOUND, Registry, TurnPlan, TurnState, surface, withholding};
use codaris_policy::{ALWAYS_ON, Task};
use proptest::prelude::*;
use std::collections::BTreeSet;

use super::common::registry;

/// Names a search might bind: registry tools, always-on ones, gated, withheld and unknown.
const POOL: &[&str] = &[
    "validate_pipeline",
    "check_run_status",
    "fetch_test_data",
    "clone_nfcore_base",
    "lint_pipeline",
    "review_pipeline",
    "planner",
    "read_file",
    "search_tools",
    "run_compliance_autofix",
    "apply_remediation_plan",
    "seqera__lint_nextflow",
    "seqera__list_runs",
    "demo__echo",
    "demo__off",
    "fetch__fetch",
    "gone__tool",
    "web_research",
    "websearch",
    "webfetch",
    "http_request",
    "mkdir",
    "touch",
    "plan_read",
    "question",
];

const MESSAGES: &[&str] = &[
    "hello",
    "/review",
    "/audit",
    "/review --quick main.nf",
    "/extend add QC",
    "/run /repair /fix",
    "what is known about TP53?",
    "see https://example.org/x",
    "/searchData /research",
];

fn event() -> impl Strategy<Value = Event> {
    let names = prop::collection::vec(prop::sample::select(POOL), 0..8);
    prop_oneof![
        prop::sample::select(MESSAGES).prop_map(Event::user),
        names.clone().prop_map(|n| super::common::search("s", &n)),
        (names, any::<bool>()).prop_map(|(n, err)| Event::ToolResult {
            id: "r".into(),
            tool: if err { "search_tools" } else { "read_file" }.into(),
            output: "Bound for your next step: demo__echo".into(),
            bound: n.iter().map(|s| (*s).to_owned()).collect(),
            is_error: err,
            pictures: Vec::new(),
            retired: String::new(),
        }),
        Just(Event::assistant("ok")),
    ]
}

fn check(history: &[Event], st: &TurnState, reg: &Registry) -> Result<(), TestCaseError> {
    let s = surface(history, st, reg);
    let unique: BTreeSet<&String> = s.tools.iter().collect();
    prop_assert_eq!(unique.len(), s.tools.len(), "duplicates in {:?}", s.tools);
    let expected_head: Vec<&str> = ALWAYS_ON
        .iter()
        .copied()
        .filter(|n| withholding(n, st.task(), reg).is_none())
        .collect();
    prop_assert!(s.tools.len() >= expected_head.len());
    prop_assert_eq!(&s.tools[..expected_head.len()], expected_head.as_slice());
    if !st.task().extension {
        prop_assert_eq!(&s.tools[..9], ALWAYS_ON.as_slice());
    }
    prop_assert!(s.found <= MAX_FOUND);
    prop_assert_eq!(s.always_on + s.forced + s.found, s.tools.len());
    prop_assert!(s.tools.iter().all(|t| reg.get(t).is_some()));
    prop_assert!(
        s.tools
            .iter()
            .all(|t| withholding(t, st.task(), reg).is_none())
    );
    prop_assert_eq!(s.filtered_from, reg.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_duplicates_and_the_nine_lead_in_order(
        history in prop::collection::vec(event(), 0..40),
        message in prop::sample::select(MESSAGES),
        lean in any::<bool>(),
        extension in any::<bool>(),
    ) {
        let mut task = Task::new("/w");
        task.extension = extension;
        let st = TurnState::new(TurnPlan::from_message(message), task, lean);
        check(&history, &st, &registry())?;
    }

    #[test]
    fn slash_parsing_never_panics_and_commands_are_known(text in ".{0,80}") {
        let plan = TurnPlan::from_message(&text);
        prop_assert!(plan.slash.commands.len() <= codaris_agent::Command::ALL.len());
        for typed in plan.slash.typed() {
            prop_assert!(typed.starts_with('/'));
        }
    }
}
