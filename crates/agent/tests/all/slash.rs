//! Every row of the slash table, the plan it makes for the policy, and the tokens that are not
//! commands.

use codaris_agent::{
    AUDIT_TOOLS, Command, EXTENSION_TOOLS, Event, REMEDIATE_TOOLS, REPAIR_TOOLS, RESEARCH_TOOLS,
    REVIEW_TOOLS, RUN_TOOLS, ReviewFlag, ReviewForm, SEARCH_DATA_TOOLS, TurnPlan, command_of,
    parse_slash,
};
use codaris_policy::{Activity, BuiltinTool, Call, Code, GrantSet, ToolId, evaluate};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{forced, state, surface_of};

fn forced_by(message: &str) -> Vec<String> {
    let s = surface_of(&[Event::user(message)], message);
    forced(&s).into_iter().map(str::to_owned).collect()
}

/// The names of a row of typed tools, as the surface lists them.
fn names(tools: &[BuiltinTool]) -> Vec<&'static str> {
    tools.iter().map(|t| t.as_str()).collect()
}

#[test]
fn every_row_of_the_table() {
    let rows: &[(&str, Vec<&str>)] = &[
        ("/review", vec!["review_pipeline"]),
        ("/audit", names(&AUDIT_TOOLS)),
        ("/review --compliance", names(&AUDIT_TOOLS)),
        ("/review --quick", names(&AUDIT_TOOLS)),
        (
            "/review why does the trimming step fail?",
            names(&REVIEW_TOOLS),
        ),
        ("/review modules/local/trim/main.nf", names(&REVIEW_TOOLS)),
        ("/review --security", names(&REVIEW_TOOLS)),
        ("/review --lint", names(&REVIEW_TOOLS)),
        ("/remediate", names(&REMEDIATE_TOOLS)),
        ("/autofix", names(&REMEDIATE_TOOLS)),
        ("/fix", vec!["apply_remediation_plan"]),
        ("/rules", vec!["list_compliance_rules"]),
        ("/searchData liver scRNA-seq", names(&SEARCH_DATA_TOOLS)),
        ("/extend add a QC step", names(&EXTENSION_TOOLS)),
        ("/run the test profile", names(&RUN_TOOLS)),
        ("/repair", names(&REPAIR_TOOLS)),
        ("/research batch correction", names(&RESEARCH_TOOLS)),
        (
            "what is known about batch correction?",
            names(&RESEARCH_TOOLS),
        ),
        ("open https://nf-co.re/rnaseq please", vec!["fetch__fetch"]),
    ];
    for (message, expected) in rows {
        assert_eq!(forced_by(message), *expected, "{message}");
    }
}

#[test]
fn run_set_holds_the_spec_names() {
    for name in [
        "autopilot_pipeline",
        "run_built_pipeline",
        "test_pipeline",
        "check_test_result",
        "prepare_samplesheet_gate",
        "debug_last_run",
    ] {
        assert!(names(&RUN_TOOLS).contains(&name), "{name}");
    }
}

#[test]
fn commands_combine_in_typed_order_without_repeats() {
    assert_eq!(
        forced_by("/fix then /remediate and /fix again"),
        ["apply_remediation_plan", "run_compliance_autofix"]
    );
}

#[test]
fn a_slash_turn_is_never_classified() {
    let plan = TurnPlan::from_message("/review what is known about GSE123456?");
    assert_eq!(plan.research, None);
    assert_eq!(plan.review_form(), Some(ReviewForm::Full));
}

#[test]
fn whole_tokens_in_any_case_with_punctuation_around() {
    for token in [
        "/Review.",
        "(/review)",
        "\"/fix,\"",
        "/AUDIT!",
        "[/searchdata]",
        "/run:",
    ] {
        assert!(command_of(token).is_some(), "{token}");
    }
    assert_eq!(command_of("/SEARCHDATA"), Some(Command::SearchData));
}

#[test]
fn path_segments_and_embedded_slashes_are_not_commands() {
    for message in [
        "look at /home/me/reviews/rnaseq",
        "cd /x/pipelines/remediated_rnaseq",
        "a/review",
        "/review/x",
        "/reviews",
        "/fixes",
        "/x/fix",
        "/ review",
        "//review",
        "/review2",
        "https://example.org/review",
        "http://host/run",
        "/unknown",
    ] {
        let slash = parse_slash(message);
        assert!(slash.is_empty(), "{message}: {:?}", slash.commands);
    }
    // A path segment does not force anything either.
    assert_eq!(
        forced_by("check /x/pipelines/remediated_rnaseq/main.nf"),
        Vec::<String>::new()
    );
}

#[test]
fn review_flags_paths_and_questions() {
    let args = |m: &str| parse_slash(m).review.unwrap();
    let a = args("/review --Quick --bogus please ./main.nf");
    assert_eq!(a.flags, [ReviewFlag::Quick]);
    assert_eq!(a.unknown_flags, ["--bogus"]);
    assert_eq!(a.paths, ["./main.nf"]);
    assert_eq!(a.question, None, "a courtesy word is not a question");
    assert_eq!(a.form(), ReviewForm::Audit);
    assert_eq!(args("/review please.").form(), ReviewForm::Bare);
    assert_eq!(args("/review --bogus").form(), ReviewForm::Bare);
    assert_eq!(
        args("can you /review this?").question.as_deref(),
        Some("can you this?")
    );
    assert_eq!(args("/review --quick --lint").form(), ReviewForm::Full);
}

#[test]
fn the_audit_is_pinned_report_only_and_read_only() {
    for message in [
        "/audit",
        "/review --compliance",
        "/review --quick",
        "/review main.nf",
    ] {
        let plan = TurnPlan::from_message(message);
        assert!(plan.report_only_pinned(), "{message}");
        let pinned = plan.pin_args(
            &ToolId::parse("run_compliance_autofix"),
            &json!({"path": "."}),
        );
        assert_eq!(pinned, Some(json!({"path": ".", "report_only": true})));
        assert_eq!(
            plan.pin_args(&ToolId::parse("lint_pipeline"), &json!({})),
            None
        );
    }
    for message in ["/remediate", "/autofix", "/audit /remediate", "/review"] {
        assert!(
            !TurnPlan::from_message(message).report_only_pinned(),
            "{message}"
        );
    }
    let plan = TurnPlan::from_message("/audit");
    assert_eq!(plan.activity(Activity::Agent), Activity::Audit);
    assert_eq!(plan.activity(Activity::Plan), Activity::Plan);
    assert_eq!(
        plan.pin_args(&ToolId::parse("run_compliance_autofix"), &json!("x")),
        None
    );
}

#[test]
fn activities_follow_the_commands() {
    let cases = [
        ("/review", Activity::Review),
        ("/review --quick", Activity::Audit),
        ("/audit", Activity::Audit),
        ("/review then /fix", Activity::Agent),
        ("/research", Activity::Research),
        ("find papers on STAR", Activity::Research),
        ("/run", Activity::Agent),
        ("hello", Activity::Agent),
    ];
    for (message, activity) in cases {
        assert_eq!(
            TurnPlan::from_message(message).activity(Activity::Agent),
            activity,
            "{message}"
        );
    }
}

fn call<'a>(tool: &'a ToolId, args: &'a serde_json::Value) -> Call<'a> {
    Call {
        tool,
        args,
        spec: None,
    }
}

/// The policy, given the turn's task and the pinned arguments, lets the audit report and
/// refuses the fixing form and the withheld reviewer.
#[test]
fn the_policy_sees_the_plan() {
    let st = state("/audit");
    let s = surface_of(&[Event::user("/audit")], "/audit");
    let task = st.dispatch_task(&s);
    let grants = GrantSet::default();
    let args = json!({"path": "/w/proj"});
    let pinned = st
        .plan()
        .pin_args(&ToolId::parse("run_compliance_autofix"), &args)
        .unwrap();
    let audit = evaluate(
        &call(&ToolId::parse("run_compliance_autofix"), &pinned),
        &grants,
        &task,
    );
    assert_eq!(audit.code, Code::AllowedByDefault, "{}", audit.sentence);
    let fixing = evaluate(
        &call(&ToolId::parse("run_compliance_autofix"), &args),
        &grants,
        &task,
    );
    assert_eq!(fixing.code, Code::SlashRequired);
    let empty = json!({});
    let review = evaluate(
        &call(&ToolId::parse("review_pipeline"), &empty),
        &grants,
        &task,
    );
    assert_eq!(review.code, Code::ToolWithheld);
}
