//! `websearch` against fake engines on 127.0.0.1: the result pages each engine's reader expects,
//! challenge pages, an unrelated result set, SearXNG's JSON.

use codaris_tools::{Engine, EngineKind, Tool, WebSearch};
use serde_json::json;

use crate::fake::{Fake, Reply, serve};
use crate::{ctx, model_error, text};

const BING: &str = r#"<html><body><ol id="b_results">
<li class="b_algo"><h2><a href="https://nextflow.io/docs/">Nextflow documentation</a></h2>
<div class="b_caption"><p>Write Nextflow DSL2 modules and workflows.</p></div></li>
<li class="b_ad"><h2><a href="https://ads.example/">An ad</a></h2></li>
<li class="b_algo"><h2><a href="https://training.nextflow.io/">Nextflow training</a></h2>
<div class="b_caption"><p>Hands-on Nextflow training.</p></div></li>
</ol></body></html>"#;

const BRAVE: &str = r#"<html><body><div id="results">
<div class="snippet" data-type="web"><a href="https://nf-co.re/modules"><div class="title">nf-core modules</div></a>
<div class="snippet-description">Shared Nextflow modules.</div></div>
<div class="snippet" data-type="news"><a href="https://news.example/">news</a></div>
</div></body></html>"#;

const DUCK: &str = r#"<html><body>
<div class="result results_links"><h2 class="result__title">
<a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.nextflow.io%2Fdocs&amp;rut=x">Nextflow docs</a></h2>
<a class="result__snippet">The Nextflow reference.</a></div>
<div class="result result--ad"><a class="result__a" href="https://ad.example/">Ad</a></div>
</body></html>"#;

const SEARX: &str = r#"{"query": "nextflow", "results": [
 {"url": "https://github.com/nextflow-io/nextflow", "title": "nextflow-io/nextflow", "content": "Nextflow on GitHub"},
 {"url": "https://nextflow.io/docs", "title": "Docs", "content": "Nextflow docs"}]}"#;

const CAPTCHA: &str = "<html><body><h1>Please solve this CAPTCHA to continue</h1></body></html>";

async fn engines() -> Fake {
    serve(|seen| {
        let path = seen.target.split('?').next().unwrap_or_default();
        match path {
            "/bing" => Reply::new(200, "text/html", BING),
            "/brave" => Reply::new(200, "text/html", BRAVE),
            "/duck" => Reply::new(200, "text/html", DUCK),
            "/searx/search" => Reply::new(200, "application/json", SEARX),
            "/captcha" => Reply::new(200, "text/html", CAPTCHA),
            "/limited" => Reply::new(429, "text/html", "slow down"),
            "/empty" => Reply::new(200, "text/html", "<html><body><p>No results found.</p></body></html>"),
            "/unrelated" => Reply::new(200, "application/json",
                r#"{"results": [{"url": "https://cooking.example/", "title": "Recipes", "content": "Soup"}]}"#),
            _ => Reply::new(500, "text/plain", "broken"),
        }
    })
    .await
}

fn tool(server: &Fake, engines: &[(EngineKind, &str)]) -> WebSearch {
    WebSearch::new(
        engines
            .iter()
            .map(|(kind, path)| Engine::at(*kind, &server.url(path)))
            .collect(),
    )
}

#[tokio::test]
async fn engines_are_merged_and_each_outcome_reported() {
    let server = engines().await;
    let search = WebSearch::new(vec![
        Engine::at(EngineKind::Brave, &server.url("/brave")),
        Engine::at(EngineKind::Bing, &server.url("/bing")),
        Engine::at(EngineKind::DuckDuckGo, &server.url("/duck")),
        Engine::searxng(&server.url("/searx/")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let output = search
        .call(&ctx(dir.path()), &json!({"query": "nextflow modules"}))
        .await
        .unwrap();
    let text = text(&output);
    assert!(
        text.starts_with(
            "Engines: brave: 1 result; bing: 2 results; duckduckgo: 1 result; searxng: 2 results\n"
        ),
        "{text}"
    );
    // Alternating by rank: each engine's first result, then the second ones; the docs page
    // listed by three engines is one entry naming all three.
    let expected = "\n1. nf-core modules\n   https://nf-co.re/modules\n   Shared Nextflow modules.\n   [brave]\n\
        \n2. Nextflow documentation\n   https://nextflow.io/docs/\n   Write Nextflow DSL2 modules and workflows.\n   [bing, duckduckgo, searxng]\n\
        \n3. nextflow-io/nextflow\n   https://github.com/nextflow-io/nextflow\n   Nextflow on GitHub\n   [searxng]\n\
        \n4. Nextflow training\n   https://training.nextflow.io/\n   Hands-on Nextflow training.\n   [bing]";
    assert!(text.ends_with(expected), "{text}");
    assert!(
        !text.contains("ad.example") && !text.contains("news.example"),
        "{text}"
    );
}

#[tokio::test]
async fn the_query_page_and_site_reach_each_engine() {
    let server = engines().await;
    let search = WebSearch::new(vec![
        Engine::at(EngineKind::Bing, &server.url("/bing")),
        Engine::searxng(&server.url("/searx")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"query": "nextflow", "page": 2, "site": "nextflow.io", "max_results": 1});
    let output = search.call(&ctx(dir.path()), &args).await.unwrap();
    assert_eq!(
        text(&output).matches("\n   [").count(),
        1,
        "{}",
        text(&output)
    );
    let mut targets: Vec<String> = server.seen().into_iter().map(|seen| seen.target).collect();
    targets.sort();
    assert_eq!(
        targets,
        vec![
            "/bing?q=nextflow+site%3Anextflow.io&first=11",
            "/searx/search?q=nextflow+site%3Anextflow.io&format=json&pageno=2",
        ]
    );
}

#[tokio::test]
async fn a_challenge_page_is_named_not_counted_as_empty() {
    let server = engines().await;
    let search = tool(
        &server,
        &[(EngineKind::Brave, "/captcha"), (EngineKind::Bing, "/bing")],
    );
    let dir = tempfile::tempdir().unwrap();
    let output = search
        .call(&ctx(dir.path()), &json!({"query": "nextflow"}))
        .await
        .unwrap();
    assert!(
        text(&output).starts_with(
            "Engines: brave: turned away by a challenge page (CAPTCHA); bing: 2 results\n"
        ),
        "{}",
        text(&output)
    );
}

#[tokio::test]
async fn every_engine_turned_away_is_an_error() {
    let server = engines().await;
    let search = tool(
        &server,
        &[
            (EngineKind::Brave, "/captcha"),
            (EngineKind::Bing, "/limited"),
            (EngineKind::DuckDuckGo, "/broken"),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let message = model_error(
        search
            .call(&ctx(dir.path()), &json!({"query": "nextflow"}))
            .await,
    );
    assert_eq!(
        message,
        "every search engine was turned away: brave: turned away by a challenge page (CAPTCHA); \
         bing: turned away by a rate limit (HTTP 429); duckduckgo: failed (HTTP 500)"
    );
}

#[tokio::test]
async fn unrelated_and_empty_sets_are_reported_and_nothing_is_returned() {
    let server = engines().await;
    let search = tool(
        &server,
        &[
            (EngineKind::Searxng, "/unrelated"),
            (EngineKind::Bing, "/empty"),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let output = search
        .call(&ctx(dir.path()), &json!({"query": "nextflow"}))
        .await
        .unwrap();
    assert_eq!(
        text(&output),
        "Engines: searxng: 1 result discarded as unrelated to the query; bing: no results\n\nNo results."
    );
}

#[tokio::test]
async fn a_searxng_without_json_is_a_failure_with_a_hint() {
    let server = engines().await;
    let search = tool(
        &server,
        &[(EngineKind::Searxng, "/empty"), (EngineKind::Bing, "/bing")],
    );
    let dir = tempfile::tempdir().unwrap();
    let output = search
        .call(&ctx(dir.path()), &json!({"query": "nextflow"}))
        .await
        .unwrap();
    assert!(
        text(&output).contains("searxng: failed (HTTP 200, not a JSON answer"),
        "{}",
        text(&output)
    );
    let message = model_error(search.call(&ctx(dir.path()), &json!({"query": "  "})).await);
    assert_eq!(message, "`query` is required");
}
