//! A stand-in for Seqera Platform's REST API (`codaris-fake-platform`), written from the
//! documented answer shapes (the Platform OpenAPI: `DescribeUserResponse`,
//! `ListWorkspacesAndOrgResponse`, `ListPipelinesResponse`, `ListWorkflowsResponse`,
//! `DescribeWorkflowResponse`, `ListTasksResponse`, `WorkflowLogResponse`) and its one write,
//! `POST /workflow/launch` (`SubmitWorkflowLaunchRequest` `{"launch": {…}}` →
//! `SubmitWorkflowLaunchResponse` `{"workflowId": …}`; see crates/seqera/tests/fixtures/
//! platform-api). A launch in [`WORKSPACE`] is answered with [`LAUNCHED_RUN`], a run that fails
//! at one task like [`FAILED_RUN`], so a launch can be followed to its diagnosis.
//!
//! Every request must carry `Authorization: Bearer <the fixture token>` (401 otherwise). It
//! holds one user, a personal context and two workspaces; workspace [`WORKSPACE`] has two
//! pipelines and three runs, the failed run [`FAILED_RUN`] has tasks and a log. A workspace it
//! does not hold is a 403, a run it does not hold a 404, as Platform answers.

use serde_json::{Value, json};

use crate::fake_http::{FakeHttp, Reply, Seen};

/// The name it gives itself (its `Server` header).
pub const NAME: &str = "codaris-fake-platform";
/// The user's id.
pub const USER_ID: u64 = 7;
/// The workspace with pipelines and runs.
pub const WORKSPACE: u64 = 123_456;
/// A run of [`WORKSPACE`] that failed.
pub const FAILED_RUN: &str = "4Bi5xBK6E2Nbhj";
/// The run every launch in [`WORKSPACE`] starts: it fails at `FASTQC (sample2)`, exit 137.
pub const LAUNCHED_RUN: &str = "5mLaunchedRun1";
/// A run of [`WORKSPACE`] that succeeded.
pub const SUCCEEDED_RUN: &str = "2kLzHvN9aQpWx1";
/// The launchpad pipeline (`pipelineId` 101, `nf-core-rnaseq`) whose launch settings
/// `GET /pipelines/101/launch` answers, in [`WORKSPACE`].
pub const LAUNCHPAD_PIPELINE: u64 = 101;
/// Its launch's id, which a launch from it sends back as the body's `id`.
pub const LAUNCHPAD_LAUNCH_ID: &str = "7pLaunchpadRnaseq1";
/// Its compute environment.
pub const LAUNCHPAD_COMPUTE_ENV: &str = "4X7YrYJp9B1d1DUpfur7DS";
/// The error line in the failed run's log.
pub const LOG_ERROR_LINE: &str =
    "ERROR ~ Error executing process > 'NFCORE_RNASEQ:RNASEQ:FASTQC (sample2)'";

/// A running fake Platform.
#[derive(Debug)]
pub struct FakePlatform {
    http: FakeHttp,
}

impl FakePlatform {
    pub fn start(token: &str) -> FakePlatform {
        let bearer = format!("Bearer {token}");
        let http = FakeHttp::start(move |seen| answer(seen, &bearer).header("Server", NAME));
        FakePlatform { http }
    }

    pub fn url(&self) -> String {
        self.http.url()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.http.seen()
    }
}

fn message(status: u16, text: &str) -> Reply {
    Reply::json(status, &json!({ "message": text }))
}

fn answer(seen: &Seen, bearer: &str) -> Reply {
    if seen.header("authorization") != Some(bearer) {
        return message(401, "Unauthorized");
    }
    let launch = seen.method == "POST" && seen.path() == "/workflow/launch";
    if seen.method != "GET" && !launch {
        return Reply::not_implemented(NAME, seen);
    }
    let workspace = seen.param("workspaceId");
    let known_workspace = match workspace.as_deref() {
        None => true,
        Some(id) => id == WORKSPACE.to_string() || id == "789",
    };
    if !known_workspace {
        return message(403, "Forbidden");
    }
    let in_workspace = workspace.as_deref() == Some(&WORKSPACE.to_string());
    let parts: Vec<&str> = seen.path().trim_matches('/').split('/').collect();
    if launch {
        // Platform requires the pipeline; everything else has a default.
        let pipeline = seen
            .json()
            .and_then(|body| body.pointer("/launch/pipeline").cloned());
        return match pipeline {
            Some(Value::String(p)) if !p.is_empty() && in_workspace => {
                Reply::json(200, &json!({"workflowId": LAUNCHED_RUN}))
            }
            Some(Value::String(_)) => message(403, "Forbidden"),
            _ => message(400, "Missing pipeline repository"),
        };
    }
    match parts.as_slice() {
        ["user-info"] => Reply::json(
            200,
            &json!({
                "user": {"id": USER_ID, "userName": "ada", "email": "ada@example.org", "firstName": "Ada"},
                "needConsent": false,
                "defaultWorkspaceId": WORKSPACE,
            }),
        ),
        ["user", id, "workspaces"] if *id == USER_ID.to_string() => Reply::json(
            200,
            &json!({"orgsAndWorkspaces": [
                {"orgId": 1, "orgName": "ada", "workspaceId": null, "workspaceName": null, "workspaceFullName": null, "visibility": null, "roles": ["owner"]},
                {"orgId": 10, "orgName": "genomics-lab", "workspaceId": WORKSPACE, "workspaceName": "production", "workspaceFullName": "RNA-seq production", "visibility": "PRIVATE", "roles": ["maintain"]},
                {"orgId": 10, "orgName": "genomics-lab", "workspaceId": 789, "workspaceName": "scratch", "workspaceFullName": "Scratch space", "visibility": "SHARED", "roles": ["launch"]},
            ]}),
        ),
        ["user", _, "workspaces"] => message(403, "Forbidden"),
        ["pipelines"] => {
            let pipelines = if in_workspace {
                pipelines()
            } else {
                Vec::new()
            };
            Reply::json(
                200,
                &json!({"pipelines": pipelines, "totalSize": pipelines.len()}),
            )
        }
        // `DescribeLaunchResponse`, shaped as tower-cli's `pipeline_launch_describe.json`.
        ["pipelines", id, "launch"] if in_workspace && *id == LAUNCHPAD_PIPELINE.to_string() => {
            Reply::json(
                200,
                &json!({"launch": {
                    "id": LAUNCHPAD_LAUNCH_ID,
                    "computeEnv": {"id": LAUNCHPAD_COMPUTE_ENV, "name": "aws-batch-lab", "platform": "aws-batch", "status": "AVAILABLE", "primary": true,
                        "config": {"region": "eu-west-1", "workDir": "s3://lab-bucket/work", "computeQueue": "TowerForge-work", "discriminator": "aws-batch"}},
                    "pipeline": "https://github.com/nf-core/rnaseq",
                    "workDir": "s3://lab-bucket/work",
                    "revision": "3.14.0",
                    "configProfiles": ["test"],
                    "paramsText": "outdir: s3://lab-bucket/results\ninput: s3://lab-bucket/samplesheet.csv\n",
                    "configText": "process.queue = 'TowerForge-work'",
                    "preRunScript": null, "postRunScript": null, "mainScript": null, "entryName": null,
                    "schemaName": null, "userSecrets": null, "workspaceSecrets": null,
                    "resume": false, "pullLatest": false, "stubRun": false,
                    "dateCreated": "2030-01-01T00:00:00Z", "lastUpdated": "2030-01-01T00:00:00Z",
                }}),
            )
        }
        ["pipelines", _, "launch"] => message(404, "Pipeline not found"),
        ["workflow"] => {
            let search = seen.param("search").unwrap_or_default().to_lowercase();
            let max = seen
                .param("max")
                .and_then(|m| m.parse::<usize>().ok())
                .unwrap_or(50);
            let matching: Vec<Value> = if in_workspace { runs() } else { Vec::new() }
                .into_iter()
                .filter(|run| {
                    let text = format!("{} {}", run["runName"], run["projectName"]).to_lowercase();
                    search.is_empty() || text.contains(&search)
                })
                .collect();
            let total = matching.len();
            let listed: Vec<Value> = matching
                .into_iter()
                .take(max)
                .map(|run| json!({"workflow": run, "workspaceId": WORKSPACE, "workspaceName": "production", "orgName": "genomics-lab"}))
                .collect();
            Reply::json(200, &json!({"workflows": listed, "totalSize": total}))
        }
        ["workflow", id] => match run(id, in_workspace) {
            Some(run) => {
                let failed = fails(id);
                Reply::json(
                    200,
                    &json!({
                        "workflow": run,
                        "progress": {"workflowProgress": {
                            "succeeded": if failed { 11 } else { 42 },
                            "failed": if failed { 1 } else { 0 },
                            "cached": 3, "running": 0, "pending": 0, "submitted": 0, "aborted": 0,
                        }},
                        "workspaceId": WORKSPACE,
                        "workspaceName": "production",
                    }),
                )
            }
            None => message(404, "Workflow not found"),
        },
        ["workflow", id, "tasks"] => match run(id, in_workspace) {
            Some(_) => {
                let tasks = tasks(id);
                Reply::json(200, &json!({"tasks": tasks, "total": tasks.len()}))
            }
            None => message(404, "Workflow not found"),
        },
        ["workflow", id, "log"] => match run(id, in_workspace) {
            Some(_) => Reply::json(
                200,
                &json!({"log": {
                    "entries": log(id),
                    "truncated": false,
                    "pending": false,
                    "message": "",
                    "rewindToken": "",
                    "forwardToken": "",
                }}),
            ),
            None => message(404, "Workflow not found"),
        },
        _ => Reply::not_implemented(NAME, seen),
    }
}

fn pipelines() -> Vec<Value> {
    vec![
        json!({"pipelineId": 101, "name": "nf-core-rnaseq", "description": "RNA sequencing analysis pipeline", "repository": "https://github.com/nf-core/rnaseq", "userName": "ada", "visibility": "PRIVATE", "deleted": false}),
        json!({"pipelineId": 102, "name": "nf-core-sarek", "description": "Germline and somatic variant calling", "repository": "https://github.com/nf-core/sarek", "userName": "ada", "visibility": "SHARED", "deleted": false}),
    ]
}

fn runs() -> Vec<Value> {
    vec![
        json!({"id": FAILED_RUN, "runName": "happy_turing", "projectName": "nf-core/rnaseq", "repository": "https://github.com/nf-core/rnaseq", "revision": "3.14.0", "status": "FAILED", "userName": "ada", "submit": "2030-01-02T10:00:00Z", "start": "2030-01-02T10:01:00Z", "complete": "2030-01-02T10:31:00Z", "duration": 1_800_000, "exitStatus": 1, "errorMessage": "Process `NFCORE_RNASEQ:RNASEQ:FASTQC (sample2)` terminated with an error exit status (137)", "workDir": "s3://lab-bucket/work", "commitId": "b89fac3"}),
        json!({"id": SUCCEEDED_RUN, "runName": "sleepy_hopper", "projectName": "nf-core/rnaseq", "repository": "https://github.com/nf-core/rnaseq", "revision": "3.14.0", "status": "SUCCEEDED", "userName": "ada", "submit": "2030-01-01T08:00:00Z", "start": "2030-01-01T08:01:00Z", "complete": "2030-01-01T09:10:00Z", "duration": 4_140_000, "exitStatus": 0, "workDir": "s3://lab-bucket/work", "commitId": "b89fac3"}),
        json!({"id": "9xYq2LmN5pRt3v", "runName": "brave_curie", "projectName": "nf-core/sarek", "repository": "https://github.com/nf-core/sarek", "revision": "3.4.0", "status": "RUNNING", "userName": "ada", "submit": "2030-01-03T12:00:00Z", "start": "2030-01-03T12:02:00Z", "workDir": "s3://lab-bucket/work"}),
    ]
}

fn fails(id: &str) -> bool {
    id == FAILED_RUN || id == LAUNCHED_RUN
}

fn run(id: &str, in_workspace: bool) -> Option<Value> {
    if in_workspace && id == LAUNCHED_RUN {
        return Some(
            json!({"id": LAUNCHED_RUN, "runName": "launched_by_codaris", "projectName": "nf-core/rnaseq", "repository": "https://github.com/nf-core/rnaseq", "revision": "3.14.0", "status": "FAILED", "userName": "ada", "submit": "2030-01-04T10:00:00Z", "start": "2030-01-04T10:01:00Z", "complete": "2030-01-04T10:20:00Z", "duration": 1_140_000, "exitStatus": 1, "errorMessage": "Process `NFCORE_RNASEQ:RNASEQ:FASTQC (sample2)` terminated with an error exit status (137)", "workDir": "s3://lab-bucket/work", "commitId": "b89fac3"}),
        );
    }
    in_workspace
        .then(runs)?
        .into_iter()
        .find(|run| run["id"] == id)
}

fn tasks(id: &str) -> Vec<Value> {
    let failed = fails(id);
    vec![
        json!({"task": {"taskId": 1, "hash": "3a/1b2c3d", "name": "NFCORE_RNASEQ:RNASEQ:FASTQC (sample1)", "process": "NFCORE_RNASEQ:RNASEQ:FASTQC", "tag": "sample1", "status": "COMPLETED", "exit": 0, "duration": 61_000, "realtime": 58_000, "cpus": 2, "memory": 4_294_967_296_u64, "workdir": "s3://lab-bucket/work/3a/1b2c3d", "nativeId": "ca1878f1-169c-4013-b30d-c5807ea1a3dd", "executor": "awsbatch", "queue": "TowerForge-work"}}),
        json!({"task": {"taskId": 2, "hash": "7f/9e8d7c", "name": "NFCORE_RNASEQ:RNASEQ:FASTQC (sample2)", "process": "NFCORE_RNASEQ:RNASEQ:FASTQC", "tag": "sample2", "status": if failed { "FAILED" } else { "COMPLETED" }, "exit": if failed { 137 } else { 0 }, "duration": 75_000, "realtime": 74_000, "cpus": 2, "memory": 4_294_967_296_u64, "workdir": "s3://lab-bucket/work/7f/9e8d7c", "nativeId": "0f3c2a9e-5b1d-4e7a-9c8b-2d6e4f1a7b3c", "executor": "awsbatch", "queue": "TowerForge-work"}}),
        json!({"task": {"taskId": 3, "hash": "c2/4a5b6c", "name": "NFCORE_RNASEQ:RNASEQ:TRIMGALORE (sample1)", "process": "NFCORE_RNASEQ:RNASEQ:TRIMGALORE", "tag": "sample1", "status": "CACHED", "exit": 0, "duration": 120_000, "realtime": 118_000, "cpus": 4, "memory": 8_589_934_592_u64, "workdir": "s3://lab-bucket/work/c2/4a5b6c"}}),
    ]
}

fn log(id: &str) -> Vec<String> {
    let mut lines = vec![
        "N E X T F L O W  ~  version 24.10.4".to_owned(),
        format!(
            "Launching `https://github.com/nf-core/rnaseq` [{id}] DSL2 - revision: b89fac3 [3.14.0]"
        ),
        "executor >  awsbatch (12)".to_owned(),
    ];
    if fails(id) {
        // Nextflow's console error block, as a task killed for memory prints it.
        lines.push(LOG_ERROR_LINE.to_owned());
        for line in [
            "",
            "Caused by:",
            "  Process `NFCORE_RNASEQ:RNASEQ:FASTQC (sample2)` terminated with an error exit status (137)",
            "",
            "Command executed:",
            "",
            "  fastqc --quiet --threads 2 sample2_1.fastq.gz sample2_2.fastq.gz",
            "",
            "Command exit status:",
            "  137",
            "",
            "Command output:",
            "  (empty)",
            "",
            "Command error:",
            "  .command.sh: line 2:   312 Killed                  fastqc --quiet --threads 2 sample2_1.fastq.gz sample2_2.fastq.gz",
            "",
            "Work dir:",
            "  s3://lab-bucket/work/7f/9e8d7c0a1b2c3d4e5f",
            "",
            " -- Check '.nextflow.log' file for details",
        ] {
            lines.push(line.to_owned());
        }
    } else {
        lines.push("Completed at: 01-Jan-2030 09:10:00".to_owned());
    }
    lines
}
