//! `codaris.v1.Tools` over skills read from disk: search, list, switch off and on.

use std::path::{Path, PathBuf};

use codaris_proto::v1;
use codaris_test_support::daemon::InProcess;
use pretty_assertions::assert_eq;
use tonic::Code;
use tonic::transport::Channel;

/// Writes `<config>/skills/` with two skills (one with references) and a broken one.
fn write_skills(config: &Path) -> PathBuf {
    let skills = config.join("skills");
    let debugging = skills.join("debugging");
    std::fs::create_dir_all(debugging.join("references")).unwrap();
    std::fs::write(
        debugging.join("SKILL.md"),
        "---\nname: debugging-failed-runs\ndescription: How to debug a failed Nextflow run: work directories, .command.err, exit codes and resuming.\nkeywords: [nextflow, failure, troubleshooting]\n---\n# Debugging\n",
    )
    .unwrap();
    std::fs::write(
        debugging.join("references/exit-codes.md"),
        "# Exit codes of Nextflow tasks and what they mean\n\n137 is out of memory.\n",
    )
    .unwrap();
    let modules = skills.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(
        modules.join("SKILL.md"),
        "---\nname: nf-core-modules\ndescription: How to write an nf-core module with meta.yml and nf-test tests.\nkeywords: nf-core, module, authoring\n---\n",
    )
    .unwrap();
    let broken = skills.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("SKILL.md"), "no front matter here\n").unwrap();
    skills
}

async fn with_skills() -> (InProcess, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let config = temp.path().join("config");
    let skills = write_skills(&config);
    (InProcess::start_in(temp, Some(config)).await, skills)
}

async fn search(channel: Channel, query: &str, kind: &str) -> v1::SearchToolsResponse {
    v1::tools_client::ToolsClient::new(channel)
        .search_tools(v1::SearchToolsRequest {
            query: query.to_owned(),
            kind: kind.to_owned(),
            limit: 0,
            explain: false,
        })
        .await
        .unwrap()
        .into_inner()
}

fn names(response: &v1::SearchToolsResponse) -> Vec<&str> {
    response.hits.iter().map(|h| h.name.as_str()).collect()
}

async fn tools_indexed(channel: Channel) -> u32 {
    v1::daemon_client::DaemonClient::new(channel)
        .status(v1::StatusRequest {})
        .await
        .unwrap()
        .into_inner()
        .tools_indexed
}

/// The built-in tools that run in this daemon, as the index lists them.
/// What the index holds of the built-ins: the tools that run here and the loop's
/// `compact_context` (compaction is on by default); never the always-on loop tools.
fn core_names() -> Vec<String> {
    let mut names: Vec<String> = codaris_daemon::calls::builtins::Builtins::new(Default::default())
        .0
        .names()
        .map(str::to_owned)
        .chain(["compact_context".to_owned()])
        // The daemon always wires the configuration's editor, so its six tools run here.
        .chain(
            [
                "config_get",
                "config_changes",
                "config_set",
                "config_revert",
                "config_commit",
                "config_rollback",
            ]
            .map(str::to_owned),
        )
        .collect();
    names.sort();
    names
}

/// Only the skills and references of a listing.
fn skills_only(tools: Vec<v1::ToolInfo>) -> Vec<v1::ToolInfo> {
    tools
        .into_iter()
        .filter(|t| t.kind == "skill" || t.kind == "reference")
        .collect()
}

#[tokio::test]
async fn with_compaction_off_compact_context_is_not_indexed() {
    let daemon = InProcess::start_with_toml("[compaction]\nenable = false\n").await;
    let channel = daemon.channel().await;
    let listed = v1::tools_client::ToolsClient::new(channel.clone())
        .list_tools(v1::ListToolsRequest {})
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(!names.contains(&"compact_context"), "{names:?}");
    assert!(names.contains(&"read_file"));
    daemon.stop().await;
}

#[tokio::test]
async fn only_tools_that_run_here_are_indexed() {
    let daemon = InProcess::start().await;
    let channel = daemon.channel().await;
    let listed = v1::tools_client::ToolsClient::new(channel.clone())
        .list_tools(v1::ListToolsRequest {})
        .await
        .unwrap()
        .into_inner();
    let names: Vec<String> = listed.tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, core_names());
    assert!(listed.tools.iter().all(|t| t.kind == "core"));
    // The research tools run here: a research turn's forced additions resolve.
    for present in ["web_research", "search_pubmed", "search_geo_sra"] {
        assert!(
            names.iter().any(|n| n == present),
            "{present} is not indexed"
        );
    }
    // An in-process daemon has no `codarisd` to run the built-in MCP server with.
    assert!(!names.iter().any(|n| n.starts_with("seqera__")));
    assert_eq!(tools_indexed(channel.clone()).await as usize, names.len());
    let answer = search(channel, "read a file", "").await;
    assert_eq!(answer.hits[0].name, "read_file");
    assert!(answer.hits[0].bindable);
    daemon.stop().await;
}

#[tokio::test]
async fn skills_and_references_are_listed_with_their_paths() {
    let (daemon, skills) = with_skills().await;
    let channel = daemon.channel().await;
    let listed = v1::tools_client::ToolsClient::new(channel.clone())
        .list_tools(v1::ListToolsRequest {})
        .await
        .unwrap()
        .into_inner();
    let path = |p: &str| skills.join(p).display().to_string();
    let info = |name: &str, kind: &str, description: &str, file: &str| v1::ToolInfo {
        name: name.to_owned(),
        kind: kind.to_owned(),
        description: description.to_owned(),
        enabled: true,
        path: path(file),
        ..Default::default()
    };
    assert_eq!(
        skills_only(listed.tools),
        vec![
            info(
                "debugging-failed-runs",
                "skill",
                "How to debug a failed Nextflow run: work directories, .command.err, exit codes and resuming.",
                "debugging/SKILL.md",
            ),
            info(
                "debugging-failed-runs/exit-codes",
                "reference",
                "Exit codes of Nextflow tasks and what they mean",
                "debugging/references/exit-codes.md",
            ),
            info(
                "nf-core-modules",
                "skill",
                "How to write an nf-core module with meta.yml and nf-test tests.",
                "modules/SKILL.md",
            ),
        ]
    );
    assert_eq!(
        tools_indexed(channel).await as usize,
        3 + core_names().len()
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_skill_is_found_with_the_path_to_read_and_never_bound() {
    let (daemon, skills) = with_skills().await;
    let answer = search(daemon.channel().await, "my nextflow run failed", "skill").await;
    let file = skills.join("debugging/SKILL.md").display().to_string();
    assert_eq!(names(&answer), ["debugging-failed-runs"]);
    let hit = &answer.hits[0];
    assert_eq!(
        (hit.kind.as_str(), hit.path.as_str(), hit.bindable),
        ("skill", file.as_str(), false)
    );
    assert_eq!(
        answer.text,
        format!(
            "Matches for \"my nextflow run failed\":\n\
             - debugging-failed-runs [skill] — How to debug a failed Nextflow run: work directories, .command.err, exit codes and resuming. (read it with read_file: {file})\n\
             Bound for your next step: none (these hits are run by a slash command or read with read_file)"
        )
    );
    let references = search(daemon.channel().await, "exit code 137", "reference").await;
    assert_eq!(names(&references), ["debugging-failed-runs/exit-codes"]);
    daemon.stop().await;
}

#[tokio::test]
async fn a_switched_off_skill_leaves_search_until_switched_on_even_across_a_restart() {
    let (daemon, _skills) = with_skills().await;
    let channel = daemon.channel().await;
    let mut tools = v1::tools_client::ToolsClient::new(channel.clone());
    let query = "write an nf-core module";
    assert_eq!(
        names(&search(channel.clone(), query, "skill").await).first(),
        Some(&"nf-core-modules")
    );

    let switched = tools
        .set_tool_enabled(v1::SetToolEnabledRequest {
            name: "nf-core-modules".to_owned(),
            enabled: false,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (switched.name.as_str(), switched.enabled),
        ("nf-core-modules", false)
    );
    assert!(!names(&search(channel.clone(), query, "any").await).contains(&"nf-core-modules"));
    // Still listed, switched off, and still counted.
    let listed = tools
        .list_tools(v1::ListToolsRequest {})
        .await
        .unwrap()
        .into_inner();
    let state: Vec<(&str, bool)> = listed
        .tools
        .iter()
        .filter(|t| t.kind != "core")
        .map(|t| (t.name.as_str(), t.enabled))
        .collect();
    assert_eq!(
        state,
        [
            ("debugging-failed-runs", true),
            ("debugging-failed-runs/exit-codes", true),
            ("nf-core-modules", false),
        ]
    );
    assert_eq!(
        tools_indexed(channel).await as usize,
        3 + core_names().len()
    );

    // The state is kept in the daemon's database.
    let temp = daemon.stop_keeping_state().await;
    let config = temp.path().join("config");
    let daemon = InProcess::start_in(temp, Some(config)).await;
    let channel = daemon.channel().await;
    assert!(!names(&search(channel.clone(), query, "any").await).contains(&"nf-core-modules"));

    let mut tools = v1::tools_client::ToolsClient::new(channel.clone());
    tools
        .set_tool_enabled(v1::SetToolEnabledRequest {
            name: "nf-core-modules".to_owned(),
            enabled: true,
        })
        .await
        .unwrap();
    assert_eq!(
        names(&search(channel, query, "skill").await).first(),
        Some(&"nf-core-modules")
    );
    daemon.stop().await;
}

#[tokio::test]
async fn unknown_names_and_kinds_are_refused_with_a_sentence() {
    let (daemon, _skills) = with_skills().await;
    let mut tools = v1::tools_client::ToolsClient::new(daemon.channel().await);
    let refused = tools
        .set_tool_enabled(v1::SetToolEnabledRequest {
            name: "github__create_issue".to_owned(),
            enabled: false,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::NotFound);
    assert_eq!(
        refused.message(),
        "no tool, skill or reference `github__create_issue` in the index; `codaris tools list` shows every name"
    );

    let refused = tools
        .set_tool_enabled(v1::SetToolEnabledRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);

    let refused = tools
        .search_tools(v1::SearchToolsRequest {
            query: "lint".to_owned(),
            kind: "tools".to_owned(),
            limit: 0,
            explain: false,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(
        refused.message(),
        "invalid argument `kind`: must be one of any, tool, core, mcp, skill or reference, not `tools`"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn websearch_asks_the_configured_searxng_instance() {
    let hits = serde_json::json!({"results": [
        {"url": "https://www.nextflow.io/docs/", "title": "Nextflow documentation",
         "content": "The Nextflow reference for processes and channels."}
    ]});
    let (base, requests) = codaris_test_support::daemon::fake_model(vec![hits.to_string()]).await;
    let daemon = InProcess::start_with_toml(&format!(
        "[tools]\nlean_surface = false\nwebsearch_engines = [\"searxng:{base}/\"]\n"
    ))
    .await;
    let script = serde_json::json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "websearch", "args": {"query": "nextflow documentation"}}]},
        {"text": "done"}
    ]}]});
    let output = crate::turns::scripted_turn(&daemon, &script, v1::PermissionMode::Ask, "search")
        .await
        .outputs
        .concat();
    assert!(output.starts_with("Engines: searxng: 1 result"), "{output}");
    assert!(output.contains("https://www.nextflow.io/docs/"), "{output}");
    assert_eq!(
        requests.lock().unwrap().len(),
        1,
        "only the configured engine was asked"
    );
    daemon.stop().await;
}

/// A loopback server answering every request with the request's own head as its body.
async fn echo_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut buffer = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buffer[..n]),
                }
            }
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                head.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.write_all(&head).await;
        }
    });
    base
}

#[tokio::test]
async fn http_request_sends_the_configured_default_headers() {
    let base = echo_server().await;
    let daemon = InProcess::start_with_toml(
        "[tools]\nlean_surface = false\nhttp_default_headers = { \"User-Agent\" = \"codaris-test/1\", \"X-Team\" = \"core\" }\n",
    )
    .await;
    let script = serde_json::json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "http_request", "args": {"url": format!("{base}/a"), "headers": {"X-Team": "mine"}}}]},
        {"text": "done"}
    ]}]});
    let output =
        crate::turns::scripted_turn(&daemon, &script, v1::PermissionMode::Bypass, "call it")
            .await
            .outputs
            .concat()
            .to_ascii_lowercase();
    assert!(output.contains("user-agent: codaris-test/1"), "{output}");
    assert!(
        output.contains("x-team: mine"),
        "the call's own header wins: {output}"
    );
    assert!(!output.contains("x-team: core"), "{output}");
    daemon.stop().await;
}

#[tokio::test]
async fn switched_off_background_tasks_leave_the_index() {
    let daemon = InProcess::start_with_toml("[tools]\nbackground = false\n").await;
    let listed = v1::tools_client::ToolsClient::new(daemon.channel().await)
        .list_tools(v1::ListToolsRequest {})
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"run_command"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("background_") || *n == "preview_server"),
        "{names:?}"
    );
    daemon.stop().await;
}
