//! Research turns through the real binaries: `/searchData` and `/research` force their tools,
//! which reach NCBI's E-utilities (the stand-in on loopback named in `[ncbi] base_url`) and a
//! search engine (a SearXNG stand-in named in `[research] engines`), with the key sent only to
//! NCBI and never shown.

use std::path::{Path, PathBuf};

use codaris_test_support::fake_eutils::FakeEutils;
use codaris_test_support::fake_http::{FakeHttp, Reply};
use codaris_test_support::sandbox::{Daemon, Sandbox, calls_script, events, stderr};
use serde_json::{Value, json};

const KEY: &str = "ncbi-key-for-tests-5f2a";

/// A sandbox whose `[ncbi]` points at `eutils` (with an email and a key) and whose research
/// engine is `engine`; a project directory; the daemon.
fn setup(eutils: &FakeEutils, engine: &str) -> (Sandbox, PathBuf, Daemon) {
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "[ncbi]\nbase_url = \"{}\"\nemail = \"ci@example.org\"\napi_key = \"{KEY}\"\n\n[research]\nengines = [\"searxng:{engine}\"]\n",
        eutils.base_url()
    ));
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).expect("the project directory");
    let daemon = sandbox.start_daemon_in(sandbox.root.path(), &[], &[]);
    (sandbox, proj, daemon)
}

/// One turn typed as `prompt` whose model makes `calls`, one per round: the turn's events.
fn turn(sandbox: &Sandbox, proj: &Path, prompt: &str, calls: &[(&str, Value)]) -> Vec<Value> {
    let script = calls_script(calls);
    let output = sandbox.run_script(proj, &script, &[], prompt);
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

fn results(events: &[Value]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| {
            (
                e["output"].as_str().unwrap_or_default().to_owned(),
                e["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

/// A SearXNG stand-in whose every answer lists `pages` (title, URL).
fn searxng(pages: &'static [(&'static str, &'static str)]) -> FakeHttp {
    FakeHttp::start(move |seen| {
        if seen.path() != "/search" {
            return Reply::not_implemented("fake-searxng", seen);
        }
        let results: Vec<Value> = pages
            .iter()
            .map(|(title, url)| json!({"title": title, "url": url, "content": title}))
            .collect();
        Reply::json(
            200,
            &json!({"query": seen.param("q"), "number_of_results": results.len(), "results": results}),
        )
        .header("Server", "fake-searxng (test stand-in)")
    })
}

#[test]
fn a_search_data_turn_forces_the_archive_and_literature_searches() {
    let eutils = FakeEutils::start();
    let engine = searxng(&[]);
    let (sandbox, proj, _daemon) = setup(&eutils, &engine.url());
    let events = turn(
        &sandbox,
        &proj,
        "/searchData human airway single-cell data",
        &[
            (
                "search_geo_sra",
                json!({"query": "airway", "organism": "Homo sapiens"}),
            ),
            (
                "search_pubmed",
                json!({"query": "airway", "max_results": 5}),
            ),
        ],
    );
    let out = results(&events);
    assert_eq!(out.len(), 2, "{events:#?}");
    let (geo, geo_failed) = &out[0];
    assert!(!geo_failed, "{geo}");
    assert!(
        geo.lines()
            .next()
            .unwrap_or_default()
            .contains("GEO series for \"airway\""),
        "{geo}"
    );
    // GEO to SRA through `extrelations`, and the runs ready for a samplesheet.
    assert!(
        geo.contains("GSE250001") && geo.contains("SRP470001"),
        "{geo}"
    );
    assert!(geo.contains("SRR26800001"), "{geo}");
    let (pubmed, pubmed_failed) = &out[1];
    assert!(!pubmed_failed, "{pubmed}");
    assert!(
        pubmed.starts_with("2 PubMed articles for \"airway\""),
        "{pubmed}"
    );
    // Every request named the tool and the email, and carried the key, which no result shows.
    let seen = eutils.seen();
    assert!(!seen.is_empty());
    for request in &seen {
        let params = codaris_test_support::fake_eutils::params(request);
        let has = |name: &str, value: &str| params.iter().any(|(k, v)| k == name && v == value);
        assert!(
            has("tool", "codaris") && has("email", "ci@example.org"),
            "{request:?}"
        );
        assert!(has("api_key", KEY), "{request:?}");
    }
    assert_eq!(eutils.rate_violations(), 0);
    let everything = serde_json::to_string(&events).unwrap_or_default();
    assert!(!everything.contains(KEY), "the key reached the events");
    // Nothing of the key in the daemon's log either.
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap_or_default();
    assert!(!log.contains(KEY));
}

#[test]
fn a_research_turn_answers_with_a_brief_whose_sources_are_numbered() {
    let eutils = FakeEutils::start();
    // The engine's results are on loopback, which web_research's guard refuses in the daemon:
    // the pages are skipped and the brief rests on PubMed, for this biomedical question.
    let engine = searxng(&[("A page on loopback", "http://127.0.0.1:9/airway")]);
    let (sandbox, proj, _daemon) = setup(&eutils, &engine.url());
    let events = turn(
        &sandbox,
        &proj,
        "/research what is known about airway epithelium cells in smokers",
        &[(
            "web_research",
            json!({"question": "airway epithelium single-cell RNA-seq in smokers", "depth": "quick"}),
        )],
    );
    let out = results(&events);
    assert_eq!(out.len(), 1, "{events:#?}");
    let (brief, failed) = &out[0];
    assert!(!failed, "{brief}");
    let first = brief.lines().next().unwrap_or_default();
    assert!(
        first
            .starts_with("Research brief: \"airway epithelium single-cell RNA-seq in smokers\" — "),
        "{brief}"
    );
    assert!(brief.contains("[1]"), "{brief}");
    assert!(
        brief.contains("https://pubmed.ncbi.nlm.nih.gov/"),
        "{brief}"
    );
    assert!(
        brief.contains("loopback") || brief.contains("127.0.0.1"),
        "{brief}"
    );
    // The engine was asked: the research tools are on the surface and reach it.
    assert!(!engine.seen().is_empty());
}

#[test]
fn a_plain_turn_does_not_get_the_research_tools() {
    let eutils = FakeEutils::start();
    let engine = searxng(&[]);
    let (sandbox, proj, _daemon) = setup(&eutils, &engine.url());
    let events = turn(
        &sandbox,
        &proj,
        "look at this project",
        &[("search_pubmed", json!({"query": "airway"}))],
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool result: {events:#?}"));
    assert_eq!(result["decision"]["code"], "not_bound", "{result:#?}");
    assert!(eutils.seen().is_empty(), "an unbound search reached NCBI");
}
