//! The client against the fake E-utilities and against plain fake servers on 127.0.0.1:
//! long id lists go as POST, `uids` order is kept, runinfo is read, a `Retry-After` is
//! honoured, and failures are one line without the key. Nothing here reaches NCBI.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

use std::time::Duration;

use codaris_ncbi::{Esearch, Eutils, EutilsConfig, NcbiError};
use codaris_test_support::fake_eutils::FakeEutils;
use codaris_test_support::fake_http::{FakeHttp, Reply};
use pretty_assertions::assert_eq;

const KEY: &str = "the-SECRET-api-key";

fn client(base_url: String, api_key: Option<&str>) -> Eutils {
    Eutils::new(EutilsConfig {
        base_url,
        email: Some("dev@example.org".into()),
        api_key: api_key.map(str::to_owned),
        retry_base_delay: Duration::from_millis(10),
        ..EutilsConfig::default()
    })
    .unwrap()
}

#[tokio::test]
async fn a_long_id_list_goes_as_a_post_form_and_keeps_its_order() {
    let fake = FakeEutils::start();
    let eutils = client(fake.base_url(), None);
    let mut ids: Vec<String> = vec!["38300005".into(), "39100001".into()];
    ids.extend((0..249).map(|n| format!("1{n:07}")));
    let raw = eutils.esummary("pubmed", &ids).await.unwrap();
    assert_eq!(raw.len(), 251);
    assert_eq!(raw[0].uid, "38300005");
    assert_eq!(raw[1].uid, "39100001");
    assert_eq!(raw[2].record["error"], "cannot get document summary");
    let seen = fake.seen();
    assert_eq!(seen[0].method, "POST");
    assert!(!seen[0].target.contains("id="), "{}", seen[0].target);
    let form = seen[0].form();
    let field = |name: &str| {
        form.iter()
            .find(|(key, _)| key == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(field("tool").as_deref(), Some("codaris"));
    assert_eq!(field("email").as_deref(), Some("dev@example.org"));
    assert!(
        field("id")
            .unwrap()
            .starts_with("38300005,39100001,10000000")
    );

    // A short list is a GET.
    let records = eutils
        .pubmed_summaries(&["39100001".into(), "38900002".into()])
        .await
        .unwrap();
    assert_eq!(fake.seen()[1].method, "GET");
    let pmids: Vec<&str> = records.iter().map(|r| r.pmid.as_str()).collect();
    assert_eq!(pmids, vec!["39100001", "38900002"]);
}

#[tokio::test]
async fn runinfo_and_sra_summaries_describe_the_same_runs() {
    let fake = FakeEutils::start();
    let eutils = client(fake.base_url(), None);
    let found = eutils
        .esearch(&Esearch::new("sra", "SRP470001"))
        .await
        .unwrap();
    assert_eq!(found.ids, vec!["29000001", "29000002"]);
    let experiments = eutils.sra_summaries(&found.ids).await.unwrap();
    let runs: Vec<&str> = experiments
        .iter()
        .flat_map(|e| e.runs.iter().map(|r| r.accession.as_str()))
        .collect();
    assert_eq!(runs, vec!["SRR26800001", "SRR26800002", "SRR26800003"]);
    let table = eutils.sra_runinfo(&found.ids).await.unwrap();
    let rows: Vec<(&str, &str, &str)> = table
        .iter()
        .map(|r| {
            (
                r.run.as_str(),
                r.library_layout.as_str(),
                r.biosample.as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("SRR26800001", "PAIRED", "SAMN38200001"),
            ("SRR26800002", "PAIRED", "SAMN38200001"),
            ("SRR26800003", "PAIRED", "SAMN38200002"),
        ]
    );
    assert_eq!(table[0].model, "Illumina NovaSeq 6000");
}

#[tokio::test]
async fn an_esearch_error_is_reported_with_its_text() {
    let fake = FakeEutils::start();
    let eutils = client(fake.base_url(), None);
    let error = eutils
        .esearch(&Esearch::new("nosuchdb", "x"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "NCBI esearch reported an error: Invalid db name specified: nosuchdb"
    );
}

#[tokio::test]
async fn retry_after_is_honoured_over_the_backoff() {
    // A server that answers 429 with `Retry-After: 0` once, then the result.
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let server = FakeHttp::start(move |_| {
        if counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Reply::json(429, &serde_json::json!({"error": "API rate limit exceeded", "api-key": KEY, "count": "4", "limit": "10"}))
                .header("Retry-After", "0")
        } else {
            Reply::json(
                200,
                &serde_json::json!({"esearchresult": {"count": "0", "idlist": []}}),
            )
        }
    });
    // The backoff alone would wait ten minutes; Retry-After says now.
    let eutils = Eutils::new(EutilsConfig {
        base_url: format!("{}/", server.url()),
        email: Some("dev@example.org".into()),
        api_key: Some(KEY.into()),
        retry_base_delay: Duration::from_secs(600),
        ..EutilsConfig::default()
    })
    .unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        eutils.esearch(&Esearch::new("pubmed", "x")),
    )
    .await
    .expect("Retry-After: 0 was not honoured")
    .unwrap();
    assert_eq!(result.count, 0);
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn other_failures_are_one_line_and_never_show_the_key() {
    let server = FakeHttp::start(|seen| match seen.param("term").as_deref() {
        Some("html") => Reply::new(
            502,
            "text/html",
            "<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body></html>",
        ),
        Some("echo") => Reply::text(400, &format!("bad request: {}", seen.target)),
        Some("garbage") => Reply::text(200, "{\"esearchresult\": "),
        _ => Reply::text(404, "no"),
    });
    let eutils = client(format!("{}/", server.url()), Some(KEY));
    let search = |term: &str| Esearch::new("pubmed", term);
    let messages = [
        eutils
            .esearch(&search("html"))
            .await
            .unwrap_err()
            .to_string(),
        eutils
            .esearch(&search("echo"))
            .await
            .unwrap_err()
            .to_string(),
        eutils
            .esearch(&search("garbage"))
            .await
            .unwrap_err()
            .to_string(),
    ];
    assert_eq!(
        messages[0],
        "NCBI esearch answered HTTP 502: <html> <body> <h1>502 Bad Gateway</h1> </body></html>"
    );
    assert!(messages[1].starts_with("NCBI esearch answered HTTP 400: bad request: /esearch.fcgi?"));
    assert!(messages[1].contains("api_key=<api_key>"), "{}", messages[1]);
    assert!(messages[2].starts_with("NCBI esearch answered with a body that is not esearch JSON"));
    for message in &messages {
        assert!(!message.contains(KEY), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }
    // Nobody listening: the transport error names no URL and no key.
    let port = server.addr().port();
    drop(server);
    let closed = client(format!("http://127.0.0.1:{port}/"), Some(KEY));
    let error = closed.esearch(&search("x")).await.unwrap_err();
    assert!(matches!(error, NcbiError::Request { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.starts_with("NCBI esearch request failed: "),
        "{message}"
    );
    assert!(
        !message.contains(KEY) && !message.contains("127.0.0.1"),
        "{message}"
    );
}

#[tokio::test]
async fn a_redirect_to_another_server_is_not_followed_with_the_key() {
    let elsewhere = FakeHttp::start(|_| Reply::text(200, "{}"));
    let target = format!("{}/esearch.fcgi", elsewhere.url());
    let server = FakeHttp::start(move |_| Reply::text(302, "moved").header("Location", &target));
    let eutils = client(format!("{}/", server.url()), Some(KEY));
    let message = eutils
        .esearch(&Esearch::new("pubmed", "x"))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(message, "NCBI esearch answered HTTP 302: moved");
    assert!(elsewhere.seen().is_empty(), "{:?}", elsewhere.seen());
}
