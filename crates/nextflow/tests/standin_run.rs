//! The stand-in's `nextflow run` (tests/fixtures/nextflow at the repository root): it runs the
//! scenario's task scripts for real and leaves what Nextflow leaves, in Nextflow's formats —
//! checked here by parsing them, so the run tools' tests stand on files that are right.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;

type TestResult = Result<(), Box<dyn Error>>;

const STAND_IN: &str = "fake nextflow: a test stand-in for Codaris, not Nextflow";
const TRACE_HEADER: &str = "task_id\thash\tnative_id\tname\tstatus\texit\tsubmit\tduration\trealtime\t%cpu\tpeak_rss\tpeak_vmem\trchar\twchar";
const FASTQC: &str = "NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE)";
const SEQTK: &str = "NFCORE_DEMO:DEMO:SEQTK_SAMPLE (SAMPLE1_PE)";
const MODULE: &str = "modules/nf-core/fastqc/main.nf";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scenario(name: &str) -> PathBuf {
    root().join("tests/fixtures/nextflow/scenarios").join(name)
}

fn command(dir: &Path, scenario: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(root().join("tests/fixtures/nextflow/nextflow"));
    cmd.args(args)
        .current_dir(dir)
        .env("FAKE_NXF_SCENARIO", scenario)
        // The agent-mode switches may be set in the environment the tests run in.
        .env_remove("NXF_AGENT_MODE")
        .env_remove("AGENT")
        .env_remove("CLAUDECODE")
        .env_remove("NXF_WORK")
        .env_remove("FAKE_NXF_LOG");
    cmd
}

fn run(dir: &Path, scenario: &Path, args: &[&str]) -> std::io::Result<Output> {
    command(dir, scenario, args).output()
}

/// A launch directory holding the template's main.nf and its FastQC module (what the repair
/// scenario watches).
fn pipeline() -> Result<tempfile::TempDir, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let template = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nfcore-template");
    std::fs::copy(template.join("main.nf"), dir.path().join("main.nf"))?;
    std::fs::create_dir_all(dir.path().join("modules/nf-core/fastqc"))?;
    std::fs::copy(template.join(MODULE), dir.path().join(MODULE))?;
    Ok(dir)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The trace as rows of named fields, after checking its header is Nextflow's default one.
fn trace(path: &Path) -> Result<Vec<std::collections::HashMap<String, String>>, Box<dyn Error>> {
    let content = std::fs::read_to_string(path)?;
    let mut lines = content.lines();
    let header = lines.next().ok_or("empty trace")?;
    assert_eq!(header, TRACE_HEADER);
    let fields: Vec<&str> = header.split('\t').collect();
    Ok(lines
        .map(|line| {
            let values: Vec<&str> = line.split('\t').collect();
            assert_eq!(values.len(), fields.len(), "{line}");
            fields
                .iter()
                .zip(values)
                .map(|(f, v)| (f.to_string(), v.to_string()))
                .collect()
        })
        .collect())
}

/// `.nextflow/history` rows: 7 tab-separated columns each.
fn history(dir: &Path) -> Result<Vec<Vec<String>>, Box<dyn Error>> {
    let content = std::fs::read_to_string(dir.join(".nextflow/history"))?;
    Ok(content
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect::<Vec<_>>())
        .inspect(|row| assert_eq!(row.len(), 7, "{row:?}"))
        .collect())
}

/// The log's entries: a line in logback's format starts one, the lines after it continue it.
/// One log entry: thread, level, logger, message (continuation lines joined with `\n`).
type Entry = (String, String, String, String);

fn log_entries(path: &Path) -> Result<Vec<Entry>, Box<dyn Error>> {
    let line = Regex::new(
        r"^(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} \[([^\]]+)\] (INFO |DEBUG|WARN |ERROR|TRACE) (\S{1,36}) - (.*)$",
    )?;
    let content = std::fs::read_to_string(path)?;
    let mut entries: Vec<Entry> = Vec::new();
    for raw in content.lines() {
        if let Some(c) = line.captures(raw) {
            entries.push((
                c[1].to_string(),
                c[2].trim().to_string(),
                c[3].to_string(),
                c[4].to_string(),
            ));
        } else {
            let last = entries
                .last_mut()
                .ok_or("the log starts with a continuation")?;
            last.3.push('\n');
            last.3.push_str(raw);
        }
    }
    Ok(entries)
}

fn is_hash(hash: &str) -> bool {
    hash.len() == 9
        && hash.as_bytes()[2] == b'/'
        && hash
            .chars()
            .enumerate()
            .all(|(i, c)| i == 2 || c.is_ascii_hexdigit())
}

#[test]
fn a_passing_run_leaves_task_dirs_trace_log_and_history_in_nextflows_formats() -> TestResult {
    let dir = pipeline()?;
    let out = run(
        dir.path(),
        &scenario("pass.json"),
        &[
            "run",
            "main.nf",
            "-profile",
            "test",
            "-with-trace",
            "-ansi-log",
            "false",
        ],
    )?;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.lines().next(), Some(STAND_IN));
    assert!(stdout.contains("N E X T F L O W  ~  version 25.10.4.fake\n"));
    assert!(
        Regex::new(r"(?m)^Launching `main\.nf` \[[a-z]+_[a-z]+\] - revision: [0-9a-f]{10}$")?
            .is_match(&stdout),
        "{stdout}"
    );

    let rows = trace(&dir.path().join("trace.txt"))?;
    assert_eq!(rows.len(), 3);
    let submit = Regex::new(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")?;
    let elapsed = Regex::new(r"^(\d+ms|\d+(\.\d)?s|(\d+h )?\d+m \d+s)$")?;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["task_id"], (i + 1).to_string());
        assert_eq!(
            (row["status"].as_str(), row["exit"].as_str()),
            ("COMPLETED", "0")
        );
        assert!(is_hash(&row["hash"]), "{}", row["hash"]);
        assert!(submit.is_match(&row["submit"]));
        assert!(elapsed.is_match(&row["duration"]), "{}", row["duration"]);
        // The task directory: work/<2 hex>/<30 hex> with every file Nextflow writes.
        let (prefix, _) = row["hash"].split_at(2);
        let parent = dir.path().join("work").join(prefix);
        let task = std::fs::read_dir(&parent)?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&row["hash"][3..]))
            })
            .ok_or("no task dir for the hash")?;
        let name = task
            .file_name()
            .ok_or("no name")?
            .to_string_lossy()
            .into_owned();
        assert_eq!(name.len(), 30);
        assert!(name.chars().all(|c| c.is_ascii_hexdigit()));
        for file in [
            ".command.sh",
            ".command.run",
            ".command.out",
            ".command.err",
            ".command.log",
            ".command.begin",
            ".exitcode",
        ] {
            assert!(task.join(file).is_file(), "{file} in {}", task.display());
        }
        assert_eq!(std::fs::read_to_string(task.join(".exitcode"))?, "0");
        assert!(
            std::fs::read_to_string(task.join(".command.sh"))?.starts_with("#!/bin/bash -ue\n")
        );
    }
    assert_eq!(rows[2]["name"], "NFCORE_DEMO:DEMO:MULTIQC");
    assert_eq!(rows[0]["name"], "NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE)");
    assert!(stdout.contains(&format!(
        "[{}] Submitted process > NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE)\n",
        rows[0]["hash"]
    )));

    let rows = history(dir.path())?;
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert!(Regex::new(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")?.is_match(&row[0]));
    assert_eq!(row[3], "OK");
    assert!(
        Regex::new(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")?
            .is_match(&row[5])
    );
    assert_eq!(
        row[6],
        "nextflow run main.nf -profile test -with-trace -ansi-log false"
    );

    let entries = log_entries(&dir.path().join(".nextflow.log"))?;
    assert!(entries.iter().any(|e| e.0 == "main"
        && e.1 == "INFO"
        && e.2 == "nextflow.cli.CmdRun"
        && e.3 == "N E X T F L O W  ~  version 25.10.4.fake"));
    assert!(
        entries
            .iter()
            .any(|e| e.3 == format!("Session UUID: {}", row[5]))
    );
    assert!(entries.iter().all(|e| e.1 != "ERROR"));
    // Published: outdir defaults to `results` in the scenario.
    assert!(
        dir.path()
            .join("results/multiqc/multiqc_report.html")
            .is_file()
    );
    Ok(())
}

#[test]
fn a_failing_task_leaves_nextflows_error_block_and_exits_1() -> TestResult {
    let dir = pipeline()?;
    let out = run(
        dir.path(),
        &scenario("repair.json"),
        &["run", "main.nf", "-with-trace", "-ansi-log", "false"],
    )?;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let rows = trace(&dir.path().join("trace.txt"))?;
    // The failure stops the run: MULTIQC is never submitted.
    let statuses: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r["name"].as_str(), r["status"].as_str(), r["exit"].as_str()))
        .collect();
    assert_eq!(
        statuses,
        [(SEQTK, "COMPLETED", "0"), (FASTQC, "FAILED", "127")]
    );
    assert_eq!(history(dir.path())?[0][3], "ERR");

    let entries = log_entries(&dir.path().join(".nextflow.log"))?;
    let error = entries
        .iter()
        .find(|e| e.1 == "ERROR")
        .ok_or("no ERROR entry")?;
    assert_eq!(
        (error.0.as_str(), error.2.as_str()),
        ("TaskFinalizer-1", "nextflow.processor.TaskProcessor")
    );
    let block: Vec<&str> = error.3.lines().collect();
    assert_eq!(block[0], format!("Error executing process > '{FASTQC}'"));
    let after = |heading: &str| -> Option<&str> {
        let at = block.iter().position(|l| *l == heading)?;
        block[at + 1..].iter().find(|l| !l.is_empty()).copied()
    };
    assert_eq!(
        after("Caused by:"),
        Some(format!("  Process `{FASTQC}` terminated with an error exit status (127)").as_str())
    );
    assert_eq!(
        after("Command executed:"),
        Some("  fastqc --quiet --threads 2 SAMPLE1_PE.sub.fastq")
    );
    assert_eq!(after("Command exit status:"), Some("  127"));
    assert_eq!(after("Command output:"), Some("  (empty)"));
    assert_eq!(
        after("Command error:"),
        Some("  .command.sh: line 2: fastqc: command not found")
    );
    let work = after("Work dir:").ok_or("no work dir")?.trim();
    let work = Path::new(work);
    assert!(
        work.starts_with(dir.path().join("work").canonicalize()?)
            || work.starts_with(dir.path().join("work"))
    );
    assert_eq!(std::fs::read_to_string(work.join(".exitcode"))?, "127");
    assert!(
        std::fs::read_to_string(work.join(".command.err"))?.contains("fastqc: command not found")
    );
    assert!(block.iter().any(|l| l.starts_with("Tip: ")));

    assert!(
        stdout.contains(&format!("ERROR ~ Error executing process > '{FASTQC}'\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n -- Check '.nextflow.log' file for details\n"),
        "{stdout}"
    );
    Ok(())
}

#[test]
fn the_repair_resumes_with_the_passed_task_cached_and_succeeds() -> TestResult {
    let dir = pipeline()?;
    let args = ["run", "main.nf", "-with-trace", "-ansi-log", "false"];
    assert_eq!(
        run(dir.path(), &scenario("repair.json"), &args)?
            .status
            .code(),
        Some(1)
    );
    let first = trace(&dir.path().join("trace.txt"))?;

    // Resumed unrepaired: the same failure, the passed task cached.
    let resume = [
        "run",
        "main.nf",
        "-resume",
        "-with-trace",
        "-ansi-log",
        "false",
    ];
    assert_eq!(
        run(dir.path(), &scenario("repair.json"), &resume)?
            .status
            .code(),
        Some(1)
    );
    let again = trace(&dir.path().join("trace.txt"))?;
    assert_eq!(
        (again[0]["status"].as_str(), again[1]["status"].as_str()),
        ("CACHED", "FAILED")
    );

    // The model's edit: the module file changes.
    let module = dir.path().join(MODULE);
    let mut source = std::fs::read_to_string(&module)?;
    source.push_str("// fixed: fastqc from the container\n");
    std::fs::write(&module, source)?;
    let out = run(dir.path(), &scenario("repair.json"), &resume)?;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let rows = trace(&dir.path().join("trace.txt"))?;
    let statuses: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["name"].as_str(), r["status"].as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            (SEQTK, "CACHED"),
            (FASTQC, "COMPLETED"),
            ("NFCORE_DEMO:DEMO:MULTIQC", "COMPLETED")
        ]
    );
    // Cached means the same task directory; the repaired script is a new task.
    assert_eq!(rows[0]["hash"], first[0]["hash"]);
    assert_ne!(rows[1]["hash"], first[1]["hash"]);
    assert!(
        stdout.contains(&format!("[{}] Cached process > {SEQTK}\n", rows[0]["hash"])),
        "{stdout}"
    );
    let cached = format!("[{}] Cached process > {SEQTK}", rows[0]["hash"]);
    assert!(
        log_entries(&dir.path().join(".nextflow.log"))?
            .iter()
            .any(|e| e.0.starts_with("Actor Thread")
                && e.2 == "nextflow.processor.TaskProcessor"
                && e.3 == cached),
        "the cache hit is logged by TaskProcessor"
    );
    // Each run rolled the previous trace and log aside, as Nextflow does.
    assert!(dir.path().join("trace.txt.2").is_file());
    assert!(dir.path().join(".nextflow.log.2").is_file());

    let rows = history(dir.path())?;
    let statuses: Vec<&str> = rows.iter().map(|r| r[3].as_str()).collect();
    assert_eq!(statuses, ["ERR", "ERR", "OK"]);
    assert!(
        rows.iter().all(|r| r[5] == rows[0][5]),
        "-resume keeps the session"
    );
    assert_ne!(rows[0][2], rows[2][2], "every run has its own name");

    // Without -resume a new session runs everything again.
    let out = run(dir.path(), &scenario("repair.json"), &args)?;
    assert_eq!(out.status.code(), Some(0));
    let rows = trace(&dir.path().join("trace.txt"))?;
    assert!(rows.iter().all(|r| r["status"] == "COMPLETED"));
    assert_ne!(history(dir.path())?[3][5], history(dir.path())?[0][5]);
    Ok(())
}

#[test]
fn agent_mode_prints_nextflows_agent_lines_on_stderr() -> TestResult {
    for (var, value) in [("NXF_AGENT_MODE", "1"), ("CLAUDECODE", "1")] {
        let dir = pipeline()?;
        let out = command(
            dir.path(),
            &scenario("repair.json"),
            &["run", "main.nf", "-profile", "test", "-ansi-log", "false"],
        )
        .env(var, value)
        // OR-ed: false here does not switch off the other one.
        .env(
            if var == "CLAUDECODE" {
                "NXF_AGENT_MODE"
            } else {
                "AGENT"
            },
            "false",
        )
        .output()?;
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            text(&out.stdout),
            format!("{STAND_IN}\n"),
            "no classic console in agent mode"
        );
        let stderr = text(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines[0], "[PIPELINE] nf-core/demo | profile=test");
        assert!(
            lines[1].starts_with("[WORKDIR] ") && lines[1].ends_with("/work"),
            "{}",
            lines[1]
        );
        assert!(
            Regex::new(&format!(
                r"^\[PROCESS [0-9a-f]{{2}}/[0-9a-f]{{6}}\] {}$",
                regex::escape(SEQTK)
            ))?
            .is_match(lines[2])
        );
        assert!(
            stderr.contains(&format!(
                "[ERROR] ERROR ~ Error executing process > '{FASTQC}'\n"
            )),
            "{stderr}"
        );
        assert!(stderr.contains("\n -- Check '.nextflow.log' file for details\n"));
        let recap = lines
            .iter()
            .position(|l| *l == format!("[ERROR] {FASTQC}"))
            .ok_or("no recap")?;
        assert_eq!(lines[recap + 1], "exit: 127");
        assert_eq!(
            lines[recap + 2],
            "cmd: fastqc --quiet --threads 2 SAMPLE1_PE.sub.fastq"
        );
        assert_eq!(
            lines[recap + 3],
            "stderr: .command.sh: line 2: fastqc: command not found"
        );
        assert!(lines[recap + 4].starts_with("workdir: "));
        assert_eq!(
            lines.last().copied(),
            Some("[FAILED] completed=2 failed=1 cached=0")
        );
        // The files do not change with the console.
        assert_eq!(history(dir.path())?[0][3], "ERR");
    }
    // Only `true` (any case) and `1` count, as Nextflow's SysEnv.getBool reads them.
    let dir = pipeline()?;
    let out = command(dir.path(), &scenario("pass.json"), &["run", "main.nf"])
        .env("NXF_AGENT_MODE", "yes")
        .env("AGENT", "TRUE")
        .output()?;
    assert!(text(&out.stderr).starts_with("[PIPELINE] "));
    let out = command(dir.path(), &scenario("pass.json"), &["run", "main.nf"])
        .env("NXF_AGENT_MODE", "yes")
        .output()?;
    assert!(
        text(&out.stdout).contains("N E X T F L O W"),
        "`yes` is not agent mode"
    );
    Ok(())
}

/// Waits (polling, bounded so a broken stand-in fails instead of hanging) for `ready`.
fn wait_for(child: &mut Child, mut ready: impl FnMut() -> bool) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        if let Some(status) = child.try_wait()? {
            return Err(format!("the run ended early: {status}").into());
        }
        if Instant::now() > deadline {
            child.kill()?;
            return Err("the run never got there".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[test]
fn a_run_in_progress_has_no_status_in_history_and_a_task_without_exitcode() -> TestResult {
    let dir = pipeline()?;
    let release = dir.path().join("release");
    let release_arg = release.to_string_lossy().into_owned();
    let mut child = command(
        dir.path(),
        &scenario("long.json"),
        &[
            "run",
            "main.nf",
            "--release",
            &release_arg,
            "-with-trace",
            "-ansi-log",
            "false",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()?;
    let work = dir.path().join("work");
    let running = || -> Option<PathBuf> {
        for prefix in std::fs::read_dir(&work).ok()?.flatten() {
            for task in std::fs::read_dir(prefix.path()).ok()?.flatten() {
                let task = task.path();
                let script = std::fs::read_to_string(task.join(".command.sh")).unwrap_or_default();
                if script.contains("aligned") && task.join(".command.begin").is_file() {
                    return Some(task);
                }
            }
        }
        None
    };
    wait_for(&mut child, || running().is_some())?;
    let task = running().ok_or("no running task")?;
    assert!(!task.join(".exitcode").exists());
    let rows = history(dir.path())?;
    assert_eq!((rows[0][1].as_str(), rows[0][3].as_str()), ("-", "-"));
    let rows = trace(&dir.path().join("trace.txt"))?;
    assert_eq!(rows.len(), 1, "only the finished task is in the trace");
    assert_eq!(rows[0]["name"], "NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE)");

    std::fs::write(&release, "")?;
    let status = child.wait()?;
    assert_eq!(status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(task.join(".exitcode"))?, "0");
    let rows = history(dir.path())?;
    assert_eq!(rows[0][3], "OK");
    assert_ne!(rows[0][1], "-");
    assert_eq!(trace(&dir.path().join("trace.txt"))?.len(), 3);
    Ok(())
}

#[test]
fn params_reach_the_scripts_and_inputs_are_staged_as_symlinks() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("main.nf"), "workflow {}\n")?;
    std::fs::write(dir.path().join("reads.fastq"), "@r\nA\n+\nI\n")?;
    std::fs::write(
        dir.path().join("params.json"),
        r#"{"greeting": "hello", "who": "file"}"#,
    )?;
    let scenario_file = dir.path().join("scenario.json");
    std::fs::write(
        &scenario_file,
        r#"{"tasks": [
            {"process": "GREET", "tag": "t1", "inputs": ["reads.fastq", "gone.fastq"],
             "script": "echo '${params.greeting} ${params.who} ${params.unset}' > out.txt\n", "outputs": ["out.txt"]},
            {"process": "FORGET", "script": "true\n", "outputs": ["never.txt"]}
        ]}"#,
    )?;
    let out = run(
        dir.path(),
        &scenario_file,
        &[
            "run",
            "main.nf",
            "-params-file",
            "params.json",
            "--who",
            "cli",
            "-work-dir",
            "scratch",
            "-with-trace",
            "t/trace.tsv",
        ],
    )?;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let rows = trace(&dir.path().join("t/trace.tsv"))?;
    assert_eq!(rows[0]["status"], "COMPLETED");
    let (prefix, rest) = rows[0]["hash"].split_at(2);
    let task = std::fs::read_dir(dir.path().join("scratch").join(prefix))?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&rest[1..]))
        .ok_or("no task dir")?
        .path();
    assert_eq!(
        std::fs::read_to_string(task.join("out.txt"))?,
        "hello cli null\n"
    );
    assert!(
        std::fs::symlink_metadata(task.join("reads.fastq"))?
            .file_type()
            .is_symlink()
    );
    // A missing input is staged all the same: a dangling link for debug_last_run to name.
    let gone = task.join("gone.fastq");
    assert!(std::fs::symlink_metadata(&gone)?.file_type().is_symlink() && !gone.exists());
    // A task that makes no declared output fails as Nextflow says it.
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  Missing output file(s) `never.txt` expected by process `FORGET`"),
        "{stdout}"
    );
    assert_eq!(
        (rows[1]["status"].as_str(), rows[1]["exit"].as_str()),
        ("FAILED", "0")
    );
    Ok(())
}

#[test]
fn a_failure_without_stderr_shows_the_command_log_as_nextflow_does() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("main.nf"), "workflow {}\n")?;
    let scenario_file = dir.path().join("scenario.json");
    std::fs::write(
        &scenario_file,
        r#"{"tasks": [{"process": "QUIET", "script": "echo only stdout\nexit 3\n"}]}"#,
    )?;
    let out = run(dir.path(), &scenario_file, &["run", "main.nf"])?;
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Command output:\n  only stdout\n\nCommand log:\n  only stdout\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("Command error:"), "{stdout}");
    assert!(stdout.contains("terminated with an error exit status (3)"));
    Ok(())
}

#[test]
fn what_it_does_not_implement_is_refused_with_127() -> TestResult {
    let dir = pipeline()?;
    let pass = scenario("pass.json");
    for args in [
        &["run", "main.nf", "-with-report"][..],
        &["run", "main.nf", "-stub-run"],
        &["run", "main.nf", "-ansi-log", "true"],
        &["run", "main.nf", "-profile"],
        &["run"],
        &["run", "main.nf", "extra"],
        &["lint", "."],
        &["log"],
    ] {
        let out = run(dir.path(), &pass, args)?;
        assert_eq!(out.status.code(), Some(127), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("fake nextflow: unsupported command"),
            "{args:?}: {stderr}"
        );
        assert!(
            !dir.path().join(".nextflow/history").exists(),
            "{args:?} ran anyway"
        );
    }
    // No scenario: nothing to play.
    let out = Command::new(root().join("tests/fixtures/nextflow/nextflow"))
        .args(["run", "main.nf"])
        .current_dir(dir.path())
        .env_remove("FAKE_NXF_SCENARIO")
        .output()?;
    assert_eq!(out.status.code(), Some(127));
    assert!(text(&out.stderr).contains("FAKE_NXF_SCENARIO"));
    std::fs::write(dir.path().join("p.yml"), "a: 1\n")?;
    assert_eq!(
        run(
            dir.path(),
            &pass,
            &["run", "main.nf", "-params-file", "p.yml"]
        )?
        .status
        .code(),
        Some(127)
    );
    Ok(())
}

#[test]
fn errors_nextflow_would_report_before_any_task_exit_1_and_bad_scenarios_exit_2() -> TestResult {
    let dir = pipeline()?;
    let out = run(
        dir.path(),
        &scenario("pass.json"),
        &["run", "main.nf", "-profile", "test,nope"],
    )?;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("ERROR ~ Unknown configuration profile: 'nope'"));
    let out = run(dir.path(), &scenario("pass.json"), &["run", "absent.nf"])?;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("ERROR ~ Cannot find script file: absent.nf"));
    assert!(!dir.path().join("work").exists());

    for (name, body) in [
        ("empty.json", r#"{"tasks": []}"#),
        ("nojson.json", "tasks:\n - x\n"),
        ("noscript.json", r#"{"tasks": [{"process": "A"}]}"#),
        (
            "escape.json",
            r#"{"tasks": [{"process": "A", "script": "true", "inputs": ["../../etc/passwd"]}]}"#,
        ),
        (
            "absolute.json",
            r#"{"tasks": [{"process": "A", "script": "true", "outputs": ["/etc/passwd"]}]}"#,
        ),
        (
            "fixed.json",
            r#"{"tasks": [{"process": "A", "script": "true", "fixed": {"when": {"exists": "../x"}, "script": "true"}}]}"#,
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, body)?;
        let out = run(dir.path(), &path, &["run", "main.nf"])?;
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).starts_with("fake nextflow: bad scenario: "),
            "{name}"
        );
        assert!(
            !dir.path().join(".nextflow/history").exists(),
            "{name} started a run"
        );
    }
    Ok(())
}
