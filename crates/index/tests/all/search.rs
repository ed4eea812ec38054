//! Behaviour of search and of the model-facing text.

use std::collections::BTreeSet;

use codaris_index::{
    Entry, Index, Kind, KindFilter, MAX_QUERY_CHARS, SearchOutcome, SearchRequest, Searcher,
    Server, render,
};
use pretty_assertions::assert_eq;

use super::common::{catalog_index, small};

fn names(outcome: &SearchOutcome) -> Vec<&str> {
    outcome.hits().iter().map(|h| h.name.as_str()).collect()
}

fn search(index: &Index, request: SearchRequest<'_>) -> SearchOutcome {
    Searcher::new().search(index, &request)
}

#[test]
fn model_facing_text_has_the_spec_shape() {
    let index = Index::build(small());
    let outcome = search(&index, SearchRequest::new("lint nextflow"));
    insta::assert_snapshot!("lint_nextflow", render(&outcome));
}

#[test]
fn slash_gated_skill_and_reference_lines() {
    let index = Index::build(small());
    let outcome = search(&index, SearchRequest::new("compliance rules autofix"));
    insta::assert_snapshot!("slash_gated", render(&outcome));
    let outcome = search(
        &index,
        SearchRequest::new("nextflow dsl2 channels").kind(KindFilter::Skill),
    );
    insta::assert_snapshot!("skill_path", render(&outcome));
}

#[test]
fn slash_gated_tools_are_found_but_never_bound() {
    let index = Index::build(small());
    let outcome = search(&index, SearchRequest::new("fix compliance violations"));
    assert_eq!(names(&outcome).first(), Some(&"run_compliance_autofix"));
    assert!(!outcome.bindable().contains(&"run_compliance_autofix"));
    let hit = &outcome.hits()[0];
    assert!(!hit.bindable);
    assert_eq!(hit.slash, ["/remediate", "/autofix"]);
}

#[test]
fn every_kind_filter_admits_only_its_kinds() {
    let index = catalog_index();
    let mut searcher = Searcher::new();
    let cases = [
        (
            KindFilter::Any,
            &[Kind::Core, Kind::Mcp, Kind::Skill, Kind::Reference][..],
        ),
        (KindFilter::Tool, &[Kind::Core, Kind::Mcp][..]),
        (KindFilter::Core, &[Kind::Core][..]),
        (KindFilter::Mcp, &[Kind::Mcp][..]),
        (KindFilter::Skill, &[Kind::Skill][..]),
        (KindFilter::Reference, &[Kind::Reference][..]),
    ];
    for (filter, kinds) in cases {
        let request = SearchRequest::new("nextflow pipeline lint config")
            .kind(filter)
            .limit(50);
        let outcome = searcher.search(&index, &request);
        assert!(!outcome.hits().is_empty(), "{filter}: no hits");
        for hit in outcome.hits() {
            assert!(
                kinds.contains(&hit.kind),
                "{filter} let through {} [{}]",
                hit.name,
                hit.kind
            );
        }
    }
    // `any` really mixes kinds.
    let any = searcher.search(&index, &SearchRequest::new("nf-core").limit(50));
    let seen: BTreeSet<Kind> = any.hits().iter().map(|h| h.kind).collect();
    assert!(seen.len() >= 3, "{seen:?}");
}

#[test]
fn kind_words_parse_and_print() {
    for word in ["any", "tool", "core", "mcp", "skill", "reference"] {
        let filter: KindFilter = word.parse().unwrap();
        assert_eq!(filter.to_string(), word);
    }
    assert!("tools".parse::<KindFilter>().is_err());
}

#[test]
fn no_hit_answers_with_three_closest_names() {
    let index = Index::build(small());
    let outcome = search(&index, SearchRequest::new("qqq zzz"));
    let SearchOutcome::NoHit { closest, .. } = &outcome else {
        panic!("expected no hit, got {outcome:?}");
    };
    assert_eq!(closest.len(), 3);
    insta::assert_snapshot!("no_hit", render(&outcome));

    let outcome = search(&index, SearchRequest::new("qqqreviewqqq"));
    let SearchOutcome::NoHit { closest, .. } = outcome else {
        panic!("expected no hit");
    };
    assert_eq!(closest.first().map(String::as_str), Some("review_pipeline"));
}

#[test]
fn switched_off_and_withheld_tools_never_appear() {
    let index = Index::build(small());
    let outcome = search(&index, SearchRequest::new("seqera__build_container_image"));
    assert!(!names(&outcome).contains(&"seqera__build_container_image"));
    if let SearchOutcome::NoHit { closest, .. } = &outcome {
        assert!(!closest.contains(&"seqera__build_container_image".to_owned()));
    }

    let withheld: BTreeSet<String> = ["review_pipeline".to_owned()].into();
    let request = SearchRequest::new("review pipeline")
        .withheld(&withheld)
        .limit(10);
    let outcome = search(&index, request);
    assert!(!names(&outcome).contains(&"review_pipeline"), "{outcome:?}");
    assert!(names(&outcome).contains(&"lint_pipeline"));
    // Still switched off in the listing, so `codaris tools list` can show its state.
    assert!(
        index
            .get("seqera__build_container_image")
            .is_some_and(|e| !e.enabled)
    );
}

#[test]
fn skills_and_references_give_a_path_and_are_not_bound() {
    let index = Index::build(small());
    let outcome = search(&index, SearchRequest::new("nf-core guidelines"));
    let hit = &outcome.hits()[0];
    assert_eq!(hit.name, "nf-core-guidelines");
    assert_eq!(
        hit.path.as_deref(),
        Some("skills/references/nf-core-guidelines.md")
    );
    assert!(!hit.bindable);
    assert!(render(&outcome).contains("read_file: skills/references/nf-core-guidelines.md"));
}

#[test]
fn exact_names_come_first_bare_or_prefixed() {
    let index = catalog_index();
    let mut searcher = Searcher::new();
    for (query, first) in [
        ("github__search_issues", "github__search_issues"),
        ("lint_nextflow", "seqera__lint_nextflow"),
        ("read_file", "read_file"),
        ("Read File", "read_file"),
        ("git_status", "git__git_status"),
    ] {
        let outcome = searcher.search(&index, &SearchRequest::new(query));
        assert_eq!(names(&outcome).first(), Some(&first), "{query}");
    }
}

#[test]
fn typos_and_partial_names_still_find_the_tool() {
    let index = catalog_index();
    let mut searcher = Searcher::new();
    for (query, want) in [
        ("lint_nextflw", "seqera__lint_nextflow"),
        ("autopil", "autopilot_pipeline"),
        ("screnshot browser", "playwright__browser_take_screenshot"),
        ("pullrequest files", "github__get_pull_request_files"),
    ] {
        let outcome = searcher.search(&index, &SearchRequest::new(query));
        let top: Vec<&str> = names(&outcome).into_iter().take(3).collect();
        assert!(top.contains(&want), "{query}: {top:?}");
    }
}

#[test]
fn mcp_servers_keywords_count_for_their_tools() {
    let mut fetch = Entry::new(
        "fetch__fetch",
        Kind::Mcp,
        "Fetches a resource and returns it as markdown.",
    );
    fetch.server = Some("fetch".into());
    let entries = vec![
        fetch,
        Entry::new("grep", Kind::Core, "Search file contents."),
    ];
    let server = Server {
        name: "fetch".into(),
        keywords: vec!["url".into()],
    };
    let without = Index::build(entries.clone());
    let with = Index::build_with_servers(entries, &[server]);
    let query = SearchRequest::new("open a url");
    assert!(search(&without, query).hits().is_empty());
    assert_eq!(names(&search(&with, query)), ["fetch__fetch"]);
}

#[test]
fn empty_and_overlong_queries_get_a_clear_message() {
    let index = Index::build(small());
    let empty = search(&index, SearchRequest::new("   "));
    assert_eq!(empty, SearchOutcome::EmptyQuery);
    assert!(render(&empty).contains("needs a query"));
    let long = "x".repeat(MAX_QUERY_CHARS + 1);
    let outcome = search(&index, SearchRequest::new(&long));
    assert_eq!(
        outcome,
        SearchOutcome::TooLong {
            chars: MAX_QUERY_CHARS + 1,
            max: MAX_QUERY_CHARS
        }
    );
    assert!(render(&outcome).contains("at most 500"));
}

#[test]
fn bindable_hits_are_data_in_rank_order() {
    let index = Index::build(small());
    let outcome = search(&index, SearchRequest::new("pipeline").limit(10));
    let bindable = outcome.bindable();
    let expected: Vec<&str> = outcome
        .hits()
        .iter()
        .filter(|h| h.kind.is_tool() && h.slash.is_empty() && h.likely)
        .map(|h| h.name.as_str())
        .collect();
    assert_eq!(bindable, expected);
    assert!(!bindable.is_empty());
    let text = render(&outcome);
    let bound_line = format!("Bound for your next step: {}", bindable.join(", "));
    assert!(text.lines().any(|l| l == bound_line), "{text}");
    // The weaker tools are listed, named as not bound, and never on the bound line.
    let weak = outcome.weak();
    if !weak.is_empty() {
        let weak_line = format!(
            "Not bound, weaker matches: {} (search with a name to bind it)",
            weak.join(", ")
        );
        assert!(text.lines().any(|l| l == weak_line), "{text}");
    }
}

#[test]
fn the_relevance_floor_binds_one_strong_hit_and_not_four_weak_ones() {
    // One tool the query describes, four that share one incidental word with it.
    let mut entries = vec![Entry::new(
        "lint_pipeline",
        Kind::Core,
        "Lint an nf-core pipeline against the community rules and report each finding.",
    )];
    for (name, description) in [
        (
            "check_run_status",
            "Check whether a pipeline run is still going.",
        ),
        ("run_built_pipeline", "Run a pipeline that was built here."),
        ("fetch_test_data", "Fetch the test data a pipeline needs."),
        (
            "show_pipeline_params",
            "Show the parameters a pipeline takes.",
        ),
    ] {
        entries.push(Entry::new(name, Kind::Core, description));
    }
    let index = Index::build(entries);
    let outcome = search(
        &index,
        SearchRequest::new("lint my pipeline against the rules"),
    );
    assert_eq!(outcome.hits().len(), 5, "{}", render(&outcome));
    assert_eq!(outcome.bindable(), ["lint_pipeline"]);
    assert_eq!(outcome.weak().len(), 4);
    let text = render(&outcome);
    assert!(
        text.contains("Bound for your next step: lint_pipeline\n"),
        "{text}"
    );
    assert!(text.contains("Not bound, weaker matches: "), "{text}");
}

#[test]
fn limit_caps_the_hits() {
    let index = catalog_index();
    let outcome = search(&index, SearchRequest::new("list").limit(2));
    assert_eq!(outcome.hits().len(), 2);
}
