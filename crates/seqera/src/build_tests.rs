//! Tests of `build_container_image` against the fake Wave.

use codaris_test_support::fake_http::{FakeHttp, Reply};
use codaris_test_support::fake_wave::{FAILED_LOG_LAST_LINE, FakeWave};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::time::Duration;

use super::*;

const TOKEN: &str = "fixture-wave-token-5f1c";

fn setup(wave: &str, token: Option<&str>) -> SeqeraSetup {
    SeqeraSetup {
        wave_url: wave.to_owned(),
        platform_url: "https://platform.invalid".to_owned(),
        token: token.map(str::to_owned),
        registries: vec!["quay.io/lab/images".into(), "ghcr.io/lab/tools".into()],
        poll_interval: Duration::from_millis(2),
        build_timeout: Duration::from_secs(60),
        ..SeqeraSetup::default()
    }
}

async fn call(setup: &SeqeraSetup, args: Value) -> Result<String, ToolFailure> {
    BuildContainerImage::new(setup).call(&args).await
}

#[tokio::test]
async fn a_tool_nf_core_ships_is_answered_without_a_build() {
    let wave = FakeWave::start(TOKEN);
    let text = call(&setup(&wave.url(), None), json!({"tool": "fastqc"}))
        .await
        .unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        "nf-core module fastqc provides fastqc 0.12.1: no build needed"
    );
    assert!(
        text.contains("docker: quay.io/biocontainers/fastqc:0.12.1--hdfd78af_0"),
        "{text}"
    );
    assert!(
        text.contains(
            "singularity: https://depot.galaxyproject.org/singularity/fastqc:0.12.1--hdfd78af_0"
        ),
        "{text}"
    );
    assert!(text.contains("conda: bioconda::fastqc=0.12.1"), "{text}");
    assert!(wave.seen().is_empty(), "Wave was not asked");
}

#[tokio::test]
async fn a_family_name_lists_its_modules() {
    let wave = FakeWave::start(TOKEN);
    let text = call(&setup(&wave.url(), None), json!({"tool": "BWA"}))
        .await
        .unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with("nf-core modules provide BWA: no build needed"),
        "{text}"
    );
    assert!(text.contains("module bwa/mem: bwa "), "{text}");
    assert!(wave.seen().is_empty());
}

#[tokio::test]
async fn a_version_nf_core_lacks_is_built_on_wave_after_polling() {
    let wave = FakeWave::start(TOKEN);
    let text = call(
        &setup(&wave.url(), None),
        json!({"tool": "fastqc", "version": "0.11.9", "packages": ["multiqc=1.25"]}),
    )
    .await
    .unwrap();
    let builds = wave.builds();
    assert_eq!(builds.len(), 1);
    let build = &builds[0];
    assert_eq!(build.entries, ["fastqc=0.11.9", "multiqc=1.25"]);
    assert_eq!(build.channels, ["conda-forge", "bioconda"]);
    assert_eq!(build.platform, "linux/amd64");
    assert_eq!(build.polls, 3, "PENDING twice, then DONE");
    assert!(!build.authenticated);
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        format!("Wave built fastqc 0.11.9: {}", build.target_image)
    );
    assert!(
        text.contains(&format!("build: {}, not cached", build.build_id)),
        "{text}"
    );
    assert!(
        text.contains("scan: vulnerabilities HIGH 1, MEDIUM 3, LOW 7"),
        "{text}"
    );
    assert!(text.contains("anonymous build (no Seqera token)"), "{text}");
    assert!(
        !text.contains("nf-core modules have other versions"),
        "packages skip the catalogue"
    );
    let statuses = wave
        .seen()
        .iter()
        .filter(|s| s.path().ends_with("/status"))
        .count();
    assert_eq!(statuses, 3);
}

#[tokio::test]
async fn an_empty_packages_list_builds_even_what_nf_core_ships_and_a_repeat_is_cached() {
    let wave = FakeWave::start(TOKEN);
    let setup = setup(&wave.url(), Some(TOKEN));
    let args = json!({"tool": "fastqc", "version": "0.12.1", "packages": [], "format": "sif", "platform": "linux/arm64"});
    let first = call(&setup, args.clone()).await.unwrap();
    assert!(first.contains("not cached"), "{first}");
    let again = call(&setup, args).await.unwrap();
    assert!(
        again.contains("cached (Wave had built the same request before)"),
        "{again}"
    );
    let builds = wave.builds();
    assert_eq!(builds[0].format, "sif");
    assert_eq!(builds[0].platform, "linux/arm64");
    assert!(builds[0].authenticated);
    assert!(!first.contains("anonymous"));
}

#[tokio::test]
async fn the_token_goes_in_the_body_and_never_into_the_answer() {
    let wave = FakeWave::start(TOKEN);
    let text = call(
        &setup(&wave.url(), Some(TOKEN)),
        json!({"tool": "seqkit", "version": "2.8.0", "packages": []}),
    )
    .await
    .unwrap();
    let post = &wave.seen()[0];
    let body = post.json().unwrap();
    assert_eq!(body["towerAccessToken"], TOKEN);
    assert_eq!(body["towerEndpoint"], "https://platform.invalid");
    assert!(
        post.header("authorization").is_none(),
        "Wave takes the token in the body"
    );
    assert!(wave.seen()[1..].iter().all(|s| !String::from_utf8_lossy(&s.body).contains(TOKEN) && !s.target.contains(TOKEN)));
    assert!(!text.contains(TOKEN));
}

#[tokio::test]
async fn a_wrong_token_is_an_invalid_seqera_token() {
    let wave = FakeWave::start(TOKEN);
    let err = call(
        &setup(&wave.url(), Some("tok-WRONG-8d2e")),
        json!({"tool": "seqkit", "packages": []}),
    )
    .await
    .unwrap_err();
    assert!(err.0.contains("invalid Seqera token"), "{err}");
    assert!(!err.0.contains("tok-WRONG-8d2e"));
    assert!(!format!("{err:?}").contains("tok-WRONG-8d2e"));
    assert!(wave.builds().is_empty());
}

#[tokio::test]
async fn a_failed_build_gives_its_reason_and_the_tail_of_its_log() {
    let wave = FakeWave::start(TOKEN);
    let err = call(
        &setup(&wave.url(), None),
        json!({"tool": "doesnotexist", "version": "1.0", "packages": []}),
    )
    .await
    .unwrap_err();
    let build = &wave.builds()[0];
    assert!(
        err.0.starts_with(&format!(
            "Wave build {} failed: Container build failed",
            build.build_id
        )),
        "{err}"
    );
    assert!(err.0.contains(FAILED_LOG_LAST_LINE), "{err}");
    assert!(err.0.contains("[fake build step 60]"), "{err}");
    assert!(
        !err.0.contains("[fake build step 10]"),
        "only the last lines: {err}"
    );
    assert!(
        wave.seen()
            .iter()
            .any(|s| s.path() == format!("/v1alpha1/builds/{}/logs", build.build_id))
    );
}

#[tokio::test]
async fn another_error_status_is_one_line_with_the_status_and_a_cut_body_without_the_token() {
    let echo = FakeHttp::start(|seen| {
        Reply::text(
            500,
            &format!(
                "boom {} {}",
                String::from_utf8_lossy(&seen.body),
                "x".repeat(2000)
            ),
        )
    });
    let err = call(
        &setup(&echo.url(), Some(TOKEN)),
        json!({"tool": "seqkit", "packages": []}),
    )
    .await
    .unwrap_err();
    assert!(
        err.0.starts_with(
            "Wave answered 500 Internal Server Error to POST /v1alpha2/container: boom"
        ),
        "{err}"
    );
    assert!(!err.0.contains(TOKEN), "{err}");
    assert!(!err.0.contains('\n'));
    assert!(err.0.len() < 600);
}

#[tokio::test]
async fn an_unlisted_registry_is_refused_before_any_request() {
    let wave = FakeWave::start(TOKEN);
    for registry in [
        "docker.io/evil/x",
        "quay.io/lab/images/",
        "QUAY.IO/lab/images",
        "quay.io/lab",
    ] {
        let err = call(
            &setup(&wave.url(), Some(TOKEN)),
            json!({"tool": "seqkit", "packages": [], "registry": registry}),
        )
        .await
        .unwrap_err();
        assert!(
            err.0.starts_with(&format!(
                "registry {registry} is not in [seqera] registries"
            )),
            "{err}"
        );
        assert!(
            err.0
                .contains("the operator lists the registries images may be pushed to")
        );
    }
    let none_listed = SeqeraSetup {
        registries: Vec::new(),
        ..setup(&wave.url(), Some(TOKEN))
    };
    let err = call(
        &none_listed,
        json!({"tool": "fastqc", "registry": "quay.io/lab/images"}),
    )
    .await
    .unwrap_err();
    assert!(err.0.contains("none are listed"), "{err}");
    assert!(wave.seen().is_empty());
}

#[tokio::test]
async fn a_listed_registry_freezes_by_default() {
    let wave = FakeWave::start(TOKEN);
    let text = call(
        &setup(&wave.url(), Some(TOKEN)),
        json!({"tool": "seqkit", "version": "2.8.0", "packages": [], "registry": "quay.io/lab/images"}),
    )
    .await
    .unwrap();
    let build = &wave.builds()[0];
    assert!(build.freeze);
    assert_eq!(
        build.build_repository.as_deref(),
        Some("quay.io/lab/images")
    );
    assert!(build.target_image.starts_with("quay.io/lab/images:"));
    assert!(
        text.contains("frozen: a permanent image in quay.io/lab/images"),
        "{text}"
    );
}

#[tokio::test]
async fn freeze_needs_a_registry_and_a_token() {
    let wave = FakeWave::start(TOKEN);
    let err = call(
        &setup(&wave.url(), Some(TOKEN)),
        json!({"tool": "seqkit", "packages": [], "freeze": true}),
    )
    .await
    .unwrap_err();
    assert!(err.0.contains("freeze: true needs a `registry`"), "{err}");
    let err = call(
        &setup(&wave.url(), None),
        json!({"tool": "seqkit", "packages": [], "registry": "quay.io/lab/images"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.0.contains("a frozen build needs a Seqera token"),
        "{err}"
    );
    assert!(wave.seen().is_empty());
}

#[tokio::test]
async fn a_module_path_nf_core_lacks_is_not_sent_as_a_package() {
    let wave = FakeWave::start(TOKEN);
    let err = call(
        &setup(&wave.url(), None),
        json!({"tool": "samtools/nosuchthing"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.0.contains("no nf-core module `samtools/nosuchthing`"),
        "{err}"
    );
    assert!(wave.seen().is_empty());
}

#[tokio::test]
async fn bad_arguments_are_sentences_and_send_nothing() {
    let wave = FakeWave::start(TOKEN);
    let setup = setup(&wave.url(), None);
    let cases = [
        (json!([]), "the arguments must be a JSON object"),
        (json!("fastqc"), "the arguments must be a JSON object"),
        (json!({}), "`tool` must be a non-empty string"),
        (json!({"tool": 3}), "`tool` must be a string"),
        (
            json!({"tool": "bwa; rm -rf /"}),
            "`tool` must be a conda package",
        ),
        (
            json!({"tool": "bwa", "version": "1 && x"}),
            "`version` must be a conda version",
        ),
        (
            json!({"tool": "bwa", "packages": "samtools"}),
            "`packages` must be a list",
        ),
        (
            json!({"tool": "bwa", "packages": ["$(id)"]}),
            "is not a conda spec",
        ),
        (
            json!({"tool": "bwa", "packages": vec!["x"; 51]}),
            "`packages` must be a list of at most 50",
        ),
        (
            json!({"tool": "bwa", "channels": ["a b"]}),
            "is not a conda channel",
        ),
        (
            json!({"tool": "bwa", "platform": "windows"}),
            "`platform` must be linux/amd64 or linux/arm64",
        ),
        (
            json!({"tool": "bwa", "format": "rpm"}),
            "`format` must be docker or sif",
        ),
        (
            json!({"tool": "bwa", "freeze": "yes"}),
            "`freeze` must be true or false",
        ),
        (
            json!({"tool": "bwa", "registry": 1}),
            "`registry` must be a string",
        ),
        (
            json!({"tool": "x".repeat(100_000)}),
            "`tool` must be a string of at most",
        ),
    ];
    for (args, expected) in cases {
        let err = call(&setup, args.clone()).await.unwrap_err();
        assert!(err.0.contains(expected), "{args}: {err}");
        assert!(!err.0.contains('\n'), "{err}");
    }
    assert!(wave.seen().is_empty());
}

#[tokio::test]
async fn a_build_of_another_version_names_the_ones_nf_core_ships() {
    let wave = FakeWave::start(TOKEN);
    let text = call(
        &setup(&wave.url(), None),
        json!({"tool": "fastqc", "version": "0.11.9"}),
    )
    .await
    .unwrap();
    assert_eq!(wave.builds()[0].entries, ["fastqc=0.11.9"]);
    assert!(
        text.ends_with(
            "\nnf-core modules have other versions, no build needed: fastqc 0.12.1 (fastqc)"
        ),
        "{text}"
    );
}

#[test]
fn a_package_naming_the_tool_pins_it_without_the_bare_name_beside_it() {
    assert_eq!(package_name("bioconda::samtools=1.21"), "samtools");
    assert_eq!(package_name("samtools>=1.19"), "samtools");
    assert_eq!(package_name("htslib"), "htslib");
    let setup = setup("http://127.0.0.1:9", Some(TOKEN));
    let tool = BuildContainerImage::new(&setup);
    let pinned = json!({"tool": "samtools", "packages": ["samtools=1.21", "htslib"]});
    let entries = tool
        .check(&pinned)
        .map(|c| c.request.entries)
        .unwrap_or_default();
    assert_eq!(entries, ["samtools=1.21", "htslib"]);
    let beside = json!({"tool": "samtools", "packages": ["htslib"]});
    let entries = tool
        .check(&beside)
        .map(|c| c.request.entries)
        .unwrap_or_default();
    assert_eq!(entries, ["samtools", "htslib"]);
}
