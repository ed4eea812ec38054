//! Pipelines beyond one machine (issue #47): what the daemon adds to a launch on Seqera
//! Platform, and whether watching 50 runs at once costs more per call than watching one.
//!
//! - **a launch**: `seqera__launch_pipeline` as a turn's host runs it — the tool's decision
//!   input from one lookup (`McpHub::decision_input`), `Dispatcher::decide` (the launch's
//!   local samplesheets looked for, the session's grants, `evaluate`, the body's digest, the
//!   decision appended durably: one `fdatasync`), then `McpHub::run` (the built-in server
//!   `seqera` over stdio: arguments checked, the body built, `POST /workflow/launch` to the
//!   stand-in Platform, the answer rendered) — against the floor: the same body's bytes POSTed
//!   straight to the same stand-in with one reqwest client, in the same run, call by call in
//!   turn. The `launch_on_platform` card is answered once before (`allow_session` for the
//!   launch's workspace, compute environment and work dir), so the timed path is the decision
//!   with that grant, not a person reading the card.
//! - **watching Platform runs**: `seqera__describe_run` and `seqera__list_run_tasks` the same
//!   way (decision and run), one call alone and 50 at once, against the same GETs straight to
//!   the stand-in, one and 50 at once.
//! - **watching local runs**: `check_run_status` (the tool the daemon registers, on a fence)
//!   on one stand-in launch directory — a run in progress as Nextflow leaves it: a history row
//!   with no status yet, a trace of the tasks that ended, their work directories, four tasks
//!   running and a `.nextflow.log` — among 1 and among 50 such runs, one call at a time and 50
//!   calls at once (one per run).
//!
//! Per call: p50 and p99 of each call's own time; for 50 at once also the round's wall time
//! divided by 50 (the cost per call when they share the machine). The machine's load is
//! printed before and after. The built-in server is this bench's own binary started again in
//! the server's mode (`codaris_seqera::serve_stdio`, as `codaris-seqera-mcp` runs it), so it is
//! built in the bench's profile without a second build.

#![expect(clippy::unwrap_used, clippy::panic, reason = "benchmark set-up")]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark writes its stand-in runs directly, outside any fence"
)]

use codaris_test_support::bench::{loadavg, percentiles};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_daemon::calls::builtins::Pictures;
use codaris_daemon::calls::dispatch::{Dispatched, Dispatcher, SessionCall};
use codaris_daemon::mcp::McpHub;
use codaris_daemon::mcp::builtin::seqera_spec;
use codaris_daemon::toolset::registry::ToolRegistry;
use codaris_ledger::{CardAnswer, CardRecord, Ledger};
use codaris_mcp::Transport;
use codaris_policy::{
    Capability, CapabilityName, Grant, Lifetime, McpTool, PermissionMode, Task, ToolId,
};
use codaris_seqera::SeqeraSetup;
use codaris_test_support::fake_platform::{FAILED_RUN, FakePlatform, WORKSPACE};
use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext};
use serde_json::{Value, json};

/// Set in the environment of this binary started again as the built-in server.
const SERVE: &str = "CODARIS_BENCH_SERVE_SEQERA";
const TOKEN: &str = "bench-platform-token-5f2e";
const SESSION: &str = "s";
/// Launches timed, each way.
const LAUNCHES: usize = 1_000;
/// Runs watched at once.
const RUNS: usize = 50;
/// Rounds of watching: each has one call alone and `RUNS` at once, each way.
const ROUNDS: usize = 60;
/// Local rounds: one call on the single run, one on one of the 50, and 50 at once.
const LOCAL_ROUNDS: usize = 200;

fn main() {
    if std::env::var_os(SERVE).is_some() {
        serve();
        return;
    }
    println!("load before: {}", loadavg());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let platform = FakePlatform::start(TOKEN);
    runtime.block_on(async {
        let daemon = Daemon::start(&platform).await;
        launch(&daemon, &platform).await;
        watch_platform(&daemon, &platform).await;
        daemon.hub.shutdown().await;
    });
    watch_local(&runtime);
    println!("load after: {}", loadavg());
}

/// The built-in server, as `codaris-seqera-mcp` runs it: its settings from the environment,
/// the protocol on stdin and stdout, one thread.
fn serve() {
    let setup = SeqeraSetup::from_env(|var| std::env::var(var).ok()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(codaris_seqera::serve_stdio(setup))
        .unwrap();
}

/// The daemon's side of a call: the MCP servers, a session's dispatcher, its task.
#[derive(Clone)]
struct Daemon {
    hub: Arc<McpHub>,
    dispatcher: Dispatcher,
    ledger: Arc<Ledger>,
    task: Task,
    _keep: Arc<(tempfile::TempDir, codaris_ledger::GrantLease)>,
}

impl Daemon {
    async fn start(platform: &FakePlatform) -> Daemon {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("proj")).unwrap();
        let ledger = Arc::new(Ledger::open(&root.join("ledger")).unwrap());
        let tools = Arc::new(ToolRegistry::new(Vec::new(), None).unwrap());
        let setup = SeqeraSetup {
            platform_url: platform.url(),
            token: Some(TOKEN.to_owned()),
            ..SeqeraSetup::default()
        };
        let mut spec = seqera_spec(&std::env::current_exe().unwrap(), &setup).unwrap();
        let Transport::Stdio { env, .. } = &mut spec.transport else {
            panic!("the built-in server runs over stdio");
        };
        env.insert(SERVE.to_owned(), "1".to_owned());
        let hub = McpHub::start(vec![spec], Vec::new(), &ledger, tools).unwrap();
        hub.launch();
        let deadline = Instant::now() + Duration::from_secs(30);
        while hub.decision_input(&mcp("launch_pipeline")).is_none() {
            assert!(
                Instant::now() < deadline,
                "the seqera server never became ready"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // As `codaris mcp enable seqera` does: its tools are off until then.
        hub.set_enabled("seqera", true).await.unwrap();
        let dispatcher = Dispatcher::new(ledger.clone()).for_session();
        // As the daemon's live session does: its view is kept while the session lives.
        let lease = ledger.lease_grant_view(SESSION);
        let mut task = Task::new(root.join("proj").display().to_string());
        task.permission_mode = PermissionMode::AcceptEdits;
        Daemon {
            hub,
            dispatcher,
            ledger,
            task,
            _keep: Arc::new((temp, lease)),
        }
    }

    /// One call as a turn's host makes it: decided (the decision's time returned apart),
    /// then run on its server.
    async fn call(&self, tool: &McpTool, args: &Value, id: String) -> (Duration, String) {
        let started = Instant::now();
        let input = self.hub.decision_input(tool).unwrap();
        let call = SessionCall {
            session_id: SESSION.into(),
            call_id: id.into(),
            tool: ToolId::Mcp(input.tool),
            args: args.clone(),
            task: self.task.clone(),
            cwd: None,
            spec: Some(input.spec),
            marks: Some(input.marks),
        };
        let dispatcher = self.dispatcher.clone();
        let dispatched = tokio::task::spawn_blocking(move || dispatcher.decide(call))
            .await
            .unwrap()
            .unwrap();
        let Dispatched::Run(permit) = dispatched else {
            panic!("`{}` was not allowed", tool.prefixed());
        };
        let decided = started.elapsed();
        let run = self
            .hub
            .run(
                permit.tool().mcp().unwrap(),
                permit.args(),
                &permit.task().cwd,
                &Pictures::Shown,
            )
            .await;
        assert!(!run.is_error, "{}", run.output);
        (decided, run.output)
    }
}

fn mcp(tool: &str) -> McpTool {
    let ToolId::Mcp(tool) = ToolId::parse(&format!("seqera__{tool}")) else {
        panic!("`seqera__{tool}` reads as an MCP tool");
    };
    tool
}

/// The floor: a reqwest client of the same stack the server uses, kept across calls.
fn direct_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

async fn direct(request: reqwest::RequestBuilder) -> Value {
    let answer = request
        .bearer_auth(TOKEN)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap()
}

async fn launch(daemon: &Daemon, platform: &FakePlatform) {
    let args = json!({
        "pipeline": "https://github.com/nf-core/rnaseq",
        "workspace_id": WORKSPACE,
        "compute_env": "hjE97A8TvD9PklUb0hwEJ",
        "revision": "3.14.0",
        "profiles": ["test"],
        "params": {"input": "s3://lab-bucket/samplesheet.csv", "outdir": "s3://lab-bucket/results"},
        "work_dir": "s3://lab-bucket/work",
        // Named, so the tool asks Platform once (without a name it reads the chosen one back).
        "run_name": "bench_launch",
    });
    // The card, answered once: the session may launch there from now on.
    let target = codaris_policy::launch_target(&args);
    daemon
        .ledger
        .append_card(&CardRecord::asked(
            "card-launch",
            SESSION,
            Some(Capability::new(
                CapabilityName::LaunchOnPlatform,
                Some(target.clone()),
            )),
            format!("launch on Seqera Platform: {target}"),
            Vec::new(),
            1,
        ))
        .unwrap();
    daemon
        .ledger
        .answer_card(
            "card-launch",
            CardAnswer::AllowSession,
            vec![Grant::new(
                CapabilityName::LaunchOnPlatform,
                Some(&target),
                Lifetime::Session,
            )],
            2,
        )
        .unwrap()
        .unwrap();
    let body = codaris_seqera::launch::launch_request(&args).unwrap().body;
    let url = format!("{}/workflow/launch?workspaceId={WORKSPACE}", platform.url());
    let client = direct_client();
    let tool = mcp("launch_pipeline");
    // Warm both: the server's first call, the client's first connection, the grant's view.
    let (_, first) = daemon.call(&tool, &args, "warm".into()).await;
    println!(
        "the launch's answer: {}",
        first.lines().next().unwrap_or("")
    );
    let request = || {
        client
            .post(&url)
            .header("Content-Type", "application/json")
            .body(body.clone())
    };
    direct(request()).await;

    let (mut floor, mut through, mut decided) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..LAUNCHES {
        let started = Instant::now();
        let answer = direct(request()).await;
        floor.push(started.elapsed());
        assert!(answer.get("workflowId").is_some(), "{answer}");

        let started = Instant::now();
        let (decision, _) = daemon.call(&tool, &args, format!("launch{i}")).await;
        through.push(started.elapsed());
        decided.push(decision);
    }
    let (f50, f99) = percentiles(&mut floor);
    let (t50, t99) = percentiles(&mut through);
    let (d50, d99) = percentiles(&mut decided);
    println!("a launch on Platform (loopback stand-in), {LAUNCHES} each, interleaved:");
    println!("  POST straight to the stand-in: p50 {f50:?} p99 {f99:?}");
    println!("  through the daemon (decide with the grant, record, run): p50 {t50:?} p99 {t99:?}");
    println!("    of which the decision and its record: p50 {d50:?} p99 {d99:?}");
    println!(
        "  the daemon's own time: p50 {:?} p99 {:?}",
        t50.saturating_sub(f50),
        t99.saturating_sub(f99)
    );
}

/// `n` calls at once, each timed; and the round's wall time.
async fn round<F, Fut>(n: usize, one: F) -> (Vec<Duration>, Duration)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let call = one(i);
        set.spawn(async move {
            let started = Instant::now();
            call.await;
            started.elapsed()
        });
    }
    let mut each = Vec::with_capacity(n);
    while let Some(took) = set.join_next().await {
        each.push(took.unwrap());
    }
    (each, started.elapsed())
}

/// Per-call samples of one way of calling, alone and `RUNS` at once.
#[derive(Default)]
struct Scaling {
    alone: Vec<Duration>,
    many: Vec<Duration>,
    /// Each round's wall time of `RUNS` at once, divided by `RUNS`.
    many_share: Vec<Duration>,
    /// Through the daemon: each call's decision and its record, alone and at once.
    decided_alone: Arc<std::sync::Mutex<Vec<Duration>>>,
    decided_many: Arc<std::sync::Mutex<Vec<Duration>>>,
}

impl Scaling {
    fn report(&mut self, label: &str) {
        let (a50, a99) = percentiles(&mut self.alone);
        let (m50, m99) = percentiles(&mut self.many);
        let (s50, s99) = percentiles(&mut self.many_share);
        println!("  {label}:");
        println!("    one call alone: p50 {a50:?} p99 {a99:?}");
        println!("    each of {RUNS} at once: p50 {m50:?} p99 {m99:?}");
        println!(
            "    {RUNS} at once, round's wall ÷ {RUNS}: p50 {s50:?} p99 {s99:?} ({:.2}× alone at p50)",
            s50.as_secs_f64() / a50.as_secs_f64()
        );
        for (label, decided) in [
            ("one call alone", &self.decided_alone),
            ("each of the calls at once", &self.decided_many),
        ] {
            let mut decided = decided.lock().unwrap();
            if !decided.is_empty() {
                let (d50, d99) = percentiles(&mut decided);
                println!("      the decision and its record, {label}: p50 {d50:?} p99 {d99:?}");
            }
        }
    }
}

async fn watch_platform(daemon: &Daemon, platform: &FakePlatform) {
    let client = direct_client();
    let args = json!({"run_id": FAILED_RUN, "workspace_id": WORKSPACE});
    for (name, path, query) in [
        ("describe_run", format!("/workflow/{FAILED_RUN}"), ""),
        (
            "list_run_tasks",
            format!("/workflow/{FAILED_RUN}/tasks"),
            "&max=50",
        ),
    ] {
        let tool = mcp(name);
        let url = format!("{}{path}?workspaceId={WORKSPACE}{query}", platform.url());
        let (_, first) = daemon.call(&tool, &args, format!("warm-{name}")).await;
        println!("{name}'s answer: {}", first.lines().next().unwrap_or(""));
        let (mut floor, mut through) = (Scaling::default(), Scaling::default());
        for r in 0..ROUNDS {
            let straight = |_| {
                let (client, url) = (client.clone(), url.clone());
                async move {
                    direct(client.get(&url)).await;
                }
            };
            let watched = |decided: &Arc<std::sync::Mutex<Vec<Duration>>>| {
                let (daemon, tool, args) = (daemon.clone(), tool.clone(), args.clone());
                let decided = decided.clone();
                move |i: usize| {
                    let (daemon, tool, args) = (daemon.clone(), tool.clone(), args.clone());
                    let decided = decided.clone();
                    async move {
                        let (decision, _) =
                            daemon.call(&tool, &args, format!("{name}-{r}-{i}")).await;
                        decided.lock().unwrap().push(decision);
                    }
                }
            };
            let (each, _) = round(1, straight).await;
            floor.alone.extend(each);
            let (each, _) = round(1, watched(&through.decided_alone)).await;
            through.alone.extend(each);
            let (each, wall) = round(RUNS, straight).await;
            floor.many.extend(each);
            floor.many_share.push(wall / RUNS as u32);
            let (each, wall) = round(RUNS, watched(&through.decided_many)).await;
            through.many.extend(each);
            through.many_share.push(wall / RUNS as u32);
        }
        println!("watching Platform runs, `{name}`, {ROUNDS} rounds, interleaved:");
        floor.report("GET straight to the stand-in");
        through.report("through the daemon (decide, record, run)");
    }
}

// ---- Local runs -------------------------------------------------------------------------

/// The default trace fields (Nextflow's docs, `trace-docs-default.txt`'s header).
const TRACE_HEADER: &str = "task_id\thash\tnative_id\tname\tstatus\texit\tsubmit\tduration\trealtime\t%cpu\tpeak_rss\tpeak_vmem\trchar\twchar\n";
/// Tasks of a stand-in run that have ended, and that are running.
const ENDED: usize = 40;
const RUNNING: usize = 4;

fn hash(run: usize, task: usize) -> (String, String) {
    let h = format!(
        "{:08x}",
        (run * 1_000 + task).wrapping_mul(2_654_435_761) as u32
    );
    (
        h[..2].to_owned(),
        format!("{}{:024x}", &h[2..], run * 1_000 + task),
    )
}

/// A run in progress as Nextflow leaves its launch directory (local executor, `-with-trace`):
/// a history row with no status yet, the ended tasks in the trace and the log, the running
/// ones with a work directory and a `Submitted process` line only.
fn stand_in_run(dir: &Path, run: usize) {
    std::fs::create_dir_all(dir.join(".nextflow")).unwrap();
    std::fs::write(
        dir.join(".nextflow/history"),
        format!(
            "2026-12-07 01:00:00\t-\tbusy_bee_{run}\t-\t6b9515aba6\te710da1b-ce06-482f-bbcf-{run:012x}\tnextflow run nf-core/demo -profile test,docker -with-trace\n"
        ),
    )
    .unwrap();
    let mut trace = String::from(TRACE_HEADER);
    let mut log = String::from(
        "Dec-07 01:00:00.100 [main] DEBUG nextflow.cli.Launcher - $> nextflow run nf-core/demo -profile test,docker -with-trace\n\
         Dec-07 01:00:00.250 [main] INFO  nextflow.cli.CmdRun - N E X T F L O W  ~  version 25.10.0\n\
         Dec-07 01:00:02.010 [main] DEBUG nextflow.Session - Session UUID: e710da1b-ce06-482f-bbcf-987a507f85d1\n\
         Dec-07 01:00:03.500 [main] DEBUG nextflow.executor.Executor - [warm up] executor > local\n\
         Dec-07 01:00:03.520 [main] DEBUG n.processor.LocalPollingMonitor - Creating local task monitor for executor 'local' > cpus=2; memory=7.7 GB; capacity=2; pollInterval=100ms; dumpInterval=5m\n",
    );
    for task in 0..ENDED + RUNNING {
        let (a, b) = hash(run, task);
        let short = format!("{a}/{}", &b[..6]);
        let name = if task < ENDED {
            format!("NFCORE_DEMO:DEMO:FASTQC (SAMPLE_{task})")
        } else {
            format!("NFCORE_DEMO:DEMO:SEQTK_TRIM (SAMPLE_{task})")
        };
        let work = dir.join("work").join(&a).join(&b);
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join(".command.begin"), b"").unwrap();
        std::fs::write(
            work.join(".command.run"),
            format!("#!/bin/bash\n### name: '{name}'\n"),
        )
        .unwrap();
        let _ = writeln!(
            log,
            "Dec-07 01:01:{:02}.000 [Task submitter] DEBUG n.executor.local.LocalTaskHandler - Launch cmd line: /bin/bash -ue .command.run\n\
             Dec-07 01:01:{:02}.001 [Task submitter] INFO  nextflow.Session - [{short}] Submitted process > {name}",
            task % 60,
            task % 60
        );
        if task < ENDED {
            std::fs::write(work.join(".exitcode"), b"0").unwrap();
            let _ = writeln!(
                trace,
                "{}\t{short}\t{}\t{name}\tCOMPLETED\t0\t2026-12-07 01:01:{:02}.000\t1m 30s\t1m 11s\t94.3%\t611.6 MB\t693.8 MB\t961.2 MB\t6.1 MB",
                task + 1,
                20_000 + task,
                task % 60
            );
            let _ = writeln!(
                log,
                "Dec-07 01:02:{:02}.500 [Task monitor] DEBUG n.processor.TaskPollingMonitor - Task completed > TaskHandler[id: {}; name: {name}; status: COMPLETED; exit: 0; error: -; workDir: {}]",
                task % 60,
                task + 1,
                work.display()
            );
        }
    }
    std::fs::write(dir.join("trace.txt"), trace).unwrap();
    std::fs::write(dir.join(".nextflow.log"), log).unwrap();
}

/// `n` stand-in runs under a root of their own, and a context fenced to it.
struct Runs {
    _temp: tempfile::TempDir,
    dirs: Vec<PathBuf>,
    ctx: Arc<ToolContext>,
}

fn runs(n: usize) -> Runs {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let workspace = root.join(".workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let dirs: Vec<PathBuf> = (0..n)
        .map(|run| {
            let dir = root.join(format!("run{run:02}"));
            stand_in_run(&dir, run);
            dir
        })
        .collect();
    let ctx = Arc::new(ToolContext {
        checkpoint: None,
        session_id: SESSION.to_owned(),
        cwd: root.clone(),
        fence: Fence::new([root]),
        workspace,
        read: Default::default(),
    });
    Runs {
        _temp: temp,
        dirs,
        ctx,
    }
}

async fn status(tool: &Arc<dyn Tool>, ctx: &ToolContext, dir: &Path) -> String {
    let output = tool
        .call(ctx, &json!({"path": dir.display().to_string()}))
        .await
        .unwrap();
    output
        .content
        .iter()
        .filter_map(|c| match c {
            codaris_tools::Content::Text(text) => Some(text.as_str()),
            codaris_tools::Content::Image { .. } => None,
        })
        .collect()
}

fn watch_local(runtime: &tokio::runtime::Runtime) {
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let tools = nextflow_tools(
        &Arc::new(pools),
        &NextflowSetup::default(),
        Arc::new(MemoryGates::default()),
    );
    let tool = tools
        .into_iter()
        .find(|t| t.name() == "check_run_status")
        .unwrap();
    let (one, fifty) = (runs(1), runs(RUNS));
    runtime.block_on(async {
        let first = status(&tool, &one.ctx, &one.dirs[0]).await;
        assert!(first.contains("running"), "{first}");
        println!("check_run_status's answer begins:");
        for line in first.lines().take(4) {
            println!("  | {line}");
        }
        let (mut alone, mut among, mut many, mut share) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for r in 0..LOCAL_ROUNDS {
            let started = Instant::now();
            status(&tool, &one.ctx, &one.dirs[0]).await;
            alone.push(started.elapsed());

            let started = Instant::now();
            status(&tool, &fifty.ctx, &fifty.dirs[r % RUNS]).await;
            among.push(started.elapsed());

            let (each, wall) = round(RUNS, |i| {
                let (tool, ctx, dir) = (tool.clone(), fifty.ctx.clone(), fifty.dirs[i].clone());
                async move {
                    status(&tool, &ctx, &dir).await;
                }
            })
            .await;
            many.extend(each);
            share.push(wall / RUNS as u32);
        }
        let (a50, a99) = percentiles(&mut alone);
        let (o50, o99) = percentiles(&mut among);
        let (m50, m99) = percentiles(&mut many);
        let (s50, s99) = percentiles(&mut share);
        println!(
            "watching local runs, `check_run_status` ({ENDED} tasks ended, {RUNNING} running), {LOCAL_ROUNDS} rounds, interleaved:"
        );
        println!("  1 run, one call: p50 {a50:?} p99 {a99:?}");
        println!(
            "  one of {RUNS} runs, one call at a time: p50 {o50:?} p99 {o99:?} ({:.2}× at p50)",
            o50.as_secs_f64() / a50.as_secs_f64()
        );
        println!("  {RUNS} runs, {RUNS} calls at once, each: p50 {m50:?} p99 {m99:?}");
        println!(
            "  {RUNS} at once, round's wall ÷ {RUNS}: p50 {s50:?} p99 {s99:?} ({:.2}× one run at p50)",
            s50.as_secs_f64() / a50.as_secs_f64()
        );
    });
}
