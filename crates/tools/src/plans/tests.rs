#![cfg(test)]
#![expect(
    clippy::disallowed_methods,
    reason = "tests plant files and read what the tools wrote"
)]

use std::os::unix::fs::symlink;

use super::*;
use crate::context::Fence;
use crate::tool::Content;
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn ctx(workspace: &Path) -> ToolContext {
    ToolContext {
        checkpoint: None,
        session_id: "s1".to_owned(),
        cwd: workspace.to_path_buf(),
        fence: Fence::new([workspace.to_path_buf()]),
        workspace: workspace.to_path_buf(),
        read: Default::default(),
    }
}

fn text(output: ToolOutput) -> String {
    output
        .content
        .into_iter()
        .map(|c| match c {
            Content::Text(t) => t,
            other => format!("{other:?}"),
        })
        .collect()
}

async fn call(tool: &dyn Tool, ctx: &ToolContext, args: Value) -> Result<String, String> {
    tool.call(ctx, &args)
        .await
        .map(text)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_plan_is_written_listed_read_and_replaced() -> TestResult {
    let temp = tempfile::tempdir()?;
    let ctx = ctx(temp.path());
    assert_eq!(call(&PlanList, &ctx, json!({})).await?, NO_PLANS);
    let wrote = call(
        &PlanWrite,
        &ctx,
        json!({"slug": "refactor", "content": "# Split the main workflow\n\n1. move modules\n"}),
    )
    .await?;
    assert!(wrote.starts_with("wrote the plan `refactor`"), "{wrote}");
    call(
        &PlanWrite,
        &ctx,
        json!({"slug": "a-first", "content": "\n## Tests first\nmore"}),
    )
    .await?;
    assert_eq!(
        std::fs::read_to_string(temp.path().join("plans/refactor.plan.md"))?,
        "# Split the main workflow\n\n1. move modules\n"
    );
    // Sorted by slug, each with its first line (heading marks dropped) and size.
    assert_eq!(
        call(&PlanList, &ctx, json!({})).await?,
        "2 plan documents, by slug:\n- `a-first`: Tests first (20 bytes)\n- `refactor`: Split the main workflow (43 bytes)"
    );
    let replaced = call(
        &PlanWrite,
        &ctx,
        json!({"slug": "refactor", "content": "# v2"}),
    )
    .await?;
    assert!(replaced.starts_with("replaced the plan"), "{replaced}");
    assert_eq!(
        call(&PlanRead, &ctx, json!({"slug": "refactor"})).await?,
        "# v2"
    );
    let missing = call(&PlanRead, &ctx, json!({"slug": "nope"}))
        .await
        .unwrap_err();
    assert!(missing.contains("no plan `nope`"), "{missing}");
    // No temporary file is left beside the plans.
    let names: Vec<_> = std::fs::read_dir(temp.path().join("plans"))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    assert_eq!(names.len(), 2, "{names:?}");
    Ok(())
}

#[test]
fn slugs_are_lowercase_ascii_words_and_nothing_else() {
    for good in ["a", "plan-1", "0day", &"x".repeat(PLAN_SLUG_MAX)] {
        assert!(check_slug("t", good).is_ok(), "{good}");
    }
    let long = "x".repeat(PLAN_SLUG_MAX + 1);
    for bad in [
        "",
        "../x",
        "..",
        "/abs",
        "a/b",
        ".git",
        ".hidden",
        "-lead",
        "Plan",
        "plan.md",
        "a b",
        "a\0b",
        "a\nb",
        // Cyrillic `а` and a fullwidth solidus: look-alikes of ASCII.
        "pl\u{430}n",
        "a\u{ff0f}b",
        "~",
        &long,
    ] {
        let refused = check_slug("plan_write", bad);
        assert!(refused.is_err(), "{bad:?}");
    }
    let long_refusal = check_slug("plan_write", &"x".repeat(10_000))
        .unwrap_err()
        .to_string();
    assert!(
        long_refusal.len() < 200,
        "the slug is not echoed whole: {long_refusal}"
    );
}

#[tokio::test]
async fn a_bad_slug_names_no_file() -> TestResult {
    let temp = tempfile::tempdir()?;
    let workspace = temp.path().join("ws");
    std::fs::create_dir(&workspace)?;
    let ctx = ctx(&workspace);
    for slug in ["../x", "/abs", ".git", "", "../../etc/passwd"] {
        let refused = call(&PlanWrite, &ctx, json!({"slug": slug, "content": "x"})).await;
        assert!(refused.is_err(), "{slug}");
        assert!(
            call(&PlanRead, &ctx, json!({"slug": slug})).await.is_err(),
            "{slug}"
        );
    }
    assert!(!temp.path().join("x.plan.md").exists());
    assert!(
        !workspace.join("plans").exists(),
        "nothing made for a refused call"
    );
    Ok(())
}

#[tokio::test]
async fn content_is_capped() -> TestResult {
    let temp = tempfile::tempdir()?;
    let ctx = ctx(temp.path());
    let big = "x".repeat(PLAN_MAX_BYTES + 1);
    let refused = call(&PlanWrite, &ctx, json!({"slug": "big", "content": big}))
        .await
        .unwrap_err();
    assert!(refused.contains("at most 262144"), "{refused}");
    assert!(!temp.path().join("plans/big.plan.md").exists());
    let fits = "x".repeat(PLAN_MAX_BYTES);
    call(&PlanWrite, &ctx, json!({"slug": "big", "content": fits})).await?;
    Ok(())
}

#[tokio::test]
async fn a_symlinked_plans_directory_is_never_followed() -> TestResult {
    let temp = tempfile::tempdir()?;
    let workspace = temp.path().join("ws");
    let outside = temp.path().join("outside");
    std::fs::create_dir_all(&workspace)?;
    std::fs::create_dir_all(&outside)?;
    std::fs::write(outside.join("secret.plan.md"), "# secret")?;
    symlink(&outside, workspace.join("plans"))?;
    let ctx = ctx(&workspace);
    let write = call(&PlanWrite, &ctx, json!({"slug": "x", "content": "pwned"}))
        .await
        .unwrap_err();
    assert!(write.contains("`plans`"), "{write}");
    assert!(!outside.join("x.plan.md").exists());
    assert!(
        call(&PlanRead, &ctx, json!({"slug": "secret"}))
            .await
            .is_err()
    );
    assert!(call(&PlanList, &ctx, json!({})).await.is_err());
    assert!(documents(&workspace).is_empty());
    Ok(())
}

#[tokio::test]
async fn a_symlinked_document_is_replaced_never_written_or_read_through() -> TestResult {
    let temp = tempfile::tempdir()?;
    let workspace = temp.path().join("ws");
    std::fs::create_dir_all(workspace.join("plans"))?;
    let target = temp.path().join("target.txt");
    std::fs::write(&target, "# outside")?;
    symlink(&target, workspace.join("plans/evil.plan.md"))?;
    let ctx = ctx(&workspace);
    let read = call(&PlanRead, &ctx, json!({"slug": "evil"}))
        .await
        .unwrap_err();
    assert!(read.contains("symlink"), "{read}");
    // Listed nowhere: a link is not a plan.
    assert_eq!(call(&PlanList, &ctx, json!({})).await?, NO_PLANS);
    assert!(documents(&workspace).is_empty());
    call(
        &PlanWrite,
        &ctx,
        json!({"slug": "evil", "content": "# mine"}),
    )
    .await?;
    assert_eq!(
        std::fs::read_to_string(&target)?,
        "# outside",
        "the target is untouched"
    );
    let placed = std::fs::symlink_metadata(workspace.join("plans/evil.plan.md"))?;
    assert!(placed.file_type().is_file(), "the link itself was replaced");
    Ok(())
}

#[tokio::test]
async fn a_hard_link_or_a_fifo_is_not_read() -> TestResult {
    let temp = tempfile::tempdir()?;
    let workspace = temp.path().join("ws");
    std::fs::create_dir_all(workspace.join("plans"))?;
    let target = temp.path().join("target.txt");
    std::fs::write(&target, "# outside")?;
    std::fs::hard_link(&target, workspace.join("plans/linked.plan.md"))?;
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        workspace.join("plans/pipe.plan.md").as_path(),
        rustix::fs::Mode::from_raw_mode(0o600),
    )?;
    let ctx = ctx(&workspace);
    let read = call(&PlanRead, &ctx, json!({"slug": "linked"}))
        .await
        .unwrap_err();
    assert!(read.contains("hard links"), "{read}");
    let fifo = call(&PlanRead, &ctx, json!({"slug": "pipe"}))
        .await
        .unwrap_err();
    assert!(fifo.contains("not a regular file"), "{fifo}");
    assert!(documents(&workspace).is_empty());
    Ok(())
}

#[tokio::test]
async fn documents_are_sorted_and_bounded_in_all() -> TestResult {
    let temp = tempfile::tempdir()?;
    let ctx = ctx(temp.path());
    let half = "y".repeat(DOCUMENTS_MAX_BYTES / 2 + 10);
    for slug in ["c", "a", "b"] {
        call(&PlanWrite, &ctx, json!({"slug": slug, "content": half})).await?;
    }
    // Not a plan: a name that is no slug.
    std::fs::write(temp.path().join("plans/Notes.plan.md"), "x")?;
    let plans = documents(temp.path());
    let slugs: Vec<&str> = plans.iter().map(|p| p.slug.as_str()).collect();
    assert_eq!(slugs, ["a", "b", "c"]);
    let total: usize = plans.iter().map(|p| p.content.len()).sum();
    assert_eq!(total, DOCUMENTS_MAX_BYTES);
    assert!(!plans[0].truncated);
    assert!(plans[1].truncated && plans[2].truncated);
    assert!(plans[2].content.is_empty());
    assert_eq!(plans[2].bytes, half.len() as u64);
    Ok(())
}

#[tokio::test]
async fn plan_exit_asks_the_daemon_to_leave_plan_mode_and_its_card_shows_the_plans() -> TestResult {
    let temp = tempfile::tempdir()?;
    let ctx = ctx(temp.path());
    let empty = PlanExit.preview(&ctx, &json!({})).ok_or("a preview")?;
    assert_eq!(empty.text, "no plan documents were written");
    call(
        &PlanWrite,
        &ctx,
        json!({"slug": "go", "content": "# Go\nstep one"}),
    )
    .await?;
    let preview = PlanExit.preview(&ctx, &json!({})).ok_or("a preview")?;
    assert_eq!(preview.kind, PreviewKind::Plan);
    assert_eq!(preview.text, "plans/go.plan.md:\n# Go\nstep one");
    let output = PlanExit.call(&ctx, &json!({})).await?;
    assert!(output.leaves_plan_mode);
    // Many plans: the first lines of the first ones, the rest by slug, long ones cut.
    let long: String = (0..30).map(|i| format!("line {i}\n")).collect();
    for i in 0..10 {
        call(
            &PlanWrite,
            &ctx,
            json!({"slug": format!("p{i}"), "content": long}),
        )
        .await?;
    }
    let preview = PlanExit.preview(&ctx, &json!({})).ok_or("a preview")?;
    assert!(preview.text.contains("line 11\n…"), "{}", preview.text);
    assert!(!preview.text.contains("line 12"), "{}", preview.text);
    assert!(
        preview.text.ends_with("\n\nand 3 more: `p7`, `p8`, `p9`"),
        "{}",
        preview.text
    );
    Ok(())
}
