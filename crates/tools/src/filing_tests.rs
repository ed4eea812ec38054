use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::context::Fence;

fn ctx(session: &str) -> ToolContext {
    ToolContext {
        checkpoint: None,
        session_id: session.to_owned(),
        cwd: "/w".into(),
        fence: Fence::new(["/w".into()]),
        workspace: "/w".into(),
        read: Default::default(),
    }
}

async fn call(tool: &SessionDescribe, session: &str, args: Value) -> Result<String, String> {
    match tool.call(&ctx(session), &args).await {
        Ok(output) => Ok(output
            .content
            .iter()
            .map(|c| match c {
                crate::Content::Text(t) => t.clone(),
                crate::Content::Image { .. } => String::new(),
            })
            .collect()),
        Err(err) => Err(err.to_string()),
    }
}

fn tool() -> (SessionDescribe, Arc<MemoryFiling>) {
    let store = Arc::new(MemoryFiling::default());
    (SessionDescribe::new(store.clone()), store)
}

#[tokio::test]
async fn no_arguments_only_report_the_title_and_tags() {
    let (tool, store) = tool();
    store
        .change("s1", &|_: &Filing| {
            Some(Filing {
                title: "fix the build".to_owned(),
                tags: vec!["ci".to_owned()],
            })
        })
        .unwrap();
    assert_eq!(
        call(&tool, "s1", json!({})).await.unwrap(),
        "session `s1`\ntitle: fix the build\ntags: ci"
    );
    assert_eq!(store.read("s1").unwrap().tags, ["ci"]);
}

#[tokio::test]
async fn a_title_and_tags_are_filed_for_the_calling_session_only() {
    let (tool, store) = tool();
    let answer = call(
        &tool,
        "s1",
        json!({"title": "  RNA-seq QC for run 42 ", "tags": ["RNAseq", " qc ", "rnaseq"]}),
    )
    .await
    .unwrap();
    assert_eq!(
        answer,
        "session `s1`: changed\ntitle: RNA-seq QC for run 42\ntags: qc, rnaseq"
    );
    assert_eq!(store.read("s2").unwrap(), Filing::default());
    let again = call(&tool, "s1", json!({"tags": ["qc", "rnaseq"]}))
        .await
        .unwrap();
    assert!(
        again.starts_with("session `s1`: already filed so"),
        "{again}"
    );
}

#[tokio::test]
async fn add_and_remove_edit_the_tags_and_tags_replaces_them() {
    let (tool, store) = tool();
    call(&tool, "s1", json!({"tags": ["a", "b"]}))
        .await
        .unwrap();
    call(
        &tool,
        "s1",
        json!({"add_tags": ["C"], "remove_tags": ["a", "zz"]}),
    )
    .await
    .unwrap();
    assert_eq!(store.read("s1").unwrap().tags, ["b", "c"]);
    call(&tool, "s1", json!({"tags": []})).await.unwrap();
    assert!(store.read("s1").unwrap().tags.is_empty());
}

#[tokio::test]
async fn conflicting_or_unknown_arguments_are_one_line_errors_that_change_nothing() {
    let (tool, store) = tool();
    let both = call(&tool, "s1", json!({"tags": ["a"], "add_tags": ["b"]}))
        .await
        .unwrap_err();
    assert_eq!(
        both,
        "session_describe: `tags` replaces every tag: give it alone, or edit with `add_tags` and `remove_tags`"
    );
    let twice = call(
        &tool,
        "s1",
        json!({"add_tags": ["x"], "remove_tags": ["X"]}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        twice,
        "session_describe: the tag `x` is both added and removed"
    );
    let unknown = call(&tool, "s1", json!({"label": "x"})).await.unwrap_err();
    assert!(unknown.contains("unknown field `label`"), "{unknown}");
    assert!(!unknown.contains('\n'));
    assert_eq!(store.read("s1").unwrap(), Filing::default());
}

#[test]
fn a_title_is_one_plain_line_within_its_bound() {
    assert_eq!(check_title(" fix it "), Ok("fix it".to_owned()));
    assert_eq!(check_title("  "), Err(FilingError::EmptyTitle));
    for hostile in [
        "two\nlines",
        "red \u{1b}[31mtext",
        "csi \u{9b}2J",
        "tab\there",
        "reversed \u{202e}txt.exe",
        "hidden\u{200b}space",
    ] {
        assert!(
            matches!(
                check_title(hostile),
                Err(FilingError::TitleCharacter { .. })
            ),
            "{hostile:?}"
        );
    }
    let long = "é".repeat(TITLE_MAX_CHARS + 1);
    assert_eq!(
        check_title(&long),
        Err(FilingError::LongTitle {
            chars: TITLE_MAX_CHARS + 1
        })
    );
    assert!(check_title(&"é".repeat(TITLE_MAX_CHARS)).is_ok());
    let message = check_title("a\u{1b}b").unwrap_err().to_string();
    assert!(message.contains("U+001B") && !message.contains('\u{1b}'));
}

#[test]
fn a_tag_is_lowercased_and_kept_to_its_alphabet_and_bound() {
    assert_eq!(
        normalise_tag(" nf-core/RNAseq "),
        Ok("nf-core/rnaseq".to_owned())
    );
    assert_eq!(normalise_tag("v3.1_b"), Ok("v3.1_b".to_owned()));
    assert_eq!(normalise_tag(""), Err(FilingError::EmptyTag));
    assert!(matches!(
        normalise_tag("two words"),
        Err(FilingError::TagCharacter { .. })
    ));
    let escaped = normalise_tag("a\u{1b}[2J").unwrap_err();
    assert_eq!(
        escaped,
        FilingError::TagCharacter {
            tag: "a[2j".to_owned(),
            code: "U+001B".to_owned()
        }
    );
    assert!(matches!(
        normalise_tag(&"x".repeat(TAG_MAX_CHARS + 1)),
        Err(FilingError::LongTag { .. })
    ));
}

#[tokio::test]
async fn a_session_holds_at_most_its_bound_of_tags() {
    let (tool, store) = tool();
    let many: Vec<String> = (0..TAGS_MAX).map(|i| format!("t{i:02}")).collect();
    call(&tool, "s1", json!({"tags": many})).await.unwrap();
    let over = call(&tool, "s1", json!({"add_tags": ["one-more"]}))
        .await
        .unwrap_err();
    assert_eq!(
        over,
        format!(
            "session_describe: {} tags; a session has at most {TAGS_MAX}",
            TAGS_MAX + 1
        )
    );
    assert_eq!(store.read("s1").unwrap().tags.len(), TAGS_MAX);
    let too_many: Vec<String> = (0..=TAGS_MAX).map(|i| format!("u{i}")).collect();
    assert!(call(&tool, "s1", json!({"tags": too_many})).await.is_err());
    // Even a list of the same tag repeated, or one only removing, is bounded.
    let repeated = vec!["a"; 100_000];
    for field in ["tags", "add_tags", "remove_tags"] {
        let refused = call(&tool, "s1", json!({field: repeated}))
            .await
            .unwrap_err();
        assert!(
            refused.ends_with(&format!("100000 tags; a session has at most {TAGS_MAX}")),
            "{refused}"
        );
    }
}
