//! Memory of `analyze_run_log` on a 100 MB `.nextflow.log`, called as the daemon calls it (the
//! tool on a multi-threaded runtime, the reading on a blocking thread): the resident set
//! before, its peak during the call, and after, from `/proc/self/status` (Linux). Issue #39's
//! target: the log is streamed and the resident set returns within 5 MiB of where it was.
//!
//! `cargo run --release -p codaris-tools --example runlog_rss [MB]`

#![allow(
    clippy::disallowed_methods,
    reason = "the example writes its log and reads /proc/self/status itself, outside any fence"
)]

use std::error::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;
use std::time::Instant;

use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, ToolContext};
use serde_json::json;

const DEFAULT_MB: u64 = 100;
const ROUNDS: usize = 3;

/// `VmRSS` and `VmHWM` (the peak) in KiB.
fn rss() -> Result<(u64, u64), Box<dyn Error>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    Ok((
        field("VmRSS:").ok_or("no VmRSS")?,
        field("VmHWM:").ok_or("no VmHWM")?,
    ))
}

/// Resets the peak (`VmHWM`) to the current resident set.
fn reset_peak() -> std::io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// A log of real-shaped records (the bench's), `mb` megabytes, written in a stream; the
/// error block at the end.
fn write_log(path: &std::path::Path, mb: u64) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    let target = mb * 1024 * 1024;
    let mut written = 0u64;
    let mut i = 0u64;
    while written < target {
        let hash = format!("{:02x}/{:06x}", i % 256, i & 0xff_ffff);
        let mut chunk = format!(
            "Mar-02 13:56:{:02}.{:03} [Task submitter] INFO  nextflow.Session - [{hash}] Submitted process > NFCORE_DEMO:DEMO:FASTQC (sample_{i})\n\
             Mar-02 13:56:{:02}.{:03} [Task monitor] DEBUG n.processor.TaskPollingMonitor - Task completed > TaskHandler[id: {i}; name: NFCORE_DEMO:DEMO:FASTQC (sample_{i}); status: COMPLETED; exit: 0; error: -; workDir: /data/run/work/{hash}b40934822f3c080d59dc7887]\n",
            i % 60,
            i % 1000,
            i % 60,
            i % 1000
        );
        if i.is_multiple_of(50) {
            chunk.push_str("Mar-02 13:56:00.000 [main] DEBUG nextflow.Session - Workflow process names [dsl2]: FASTQC, MULTIQC\n  continuation line one\n  continuation line two\n");
        }
        out.write_all(chunk.as_bytes())?;
        written += chunk.len() as u64;
        i += 1;
    }
    out.write_all(b"Mar-02 13:59:14.280 [Task monitor] ERROR nextflow.processor.TaskProcessor - Error executing process > 'NFCORE_DEMO:DEMO:FASTQC (sample_1)'\n\nCaused by:\n  Process `NFCORE_DEMO:DEMO:FASTQC (sample_1)` terminated with an error exit status (127)\n\nCommand executed:\n\n  fastqc --threads 2 sample_1.fastq.gz\n\nCommand exit status:\n  127\n\nCommand output:\n  (empty)\n\nCommand error:\n  .command.sh: line 2: fastqc: command not found\n\nWork dir:\n  /data/run/work/c5/f00c97b40934822f3c080d59dc7887\n")?;
    out.flush()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mb = std::env::args()
        .nth(1)
        .map(|a| a.parse::<u64>())
        .transpose()?
        .unwrap_or(DEFAULT_MB);
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    write_log(&root.join(".nextflow.log"), mb)?;
    let size = std::fs::metadata(root.join(".nextflow.log"))?.len();
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]),
        workspace: root.clone(),
        read: Default::default(),
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let tools = nextflow_tools(
        &Arc::new(pools),
        &NextflowSetup::default(),
        Arc::new(MemoryGates::default()),
    );
    let tool = tools
        .iter()
        .find(|t| t.name() == "analyze_run_log")
        .ok_or("no analyze_run_log")?;
    println!("log: {size} bytes");
    let (start, _) = rss()?;
    for round in 1..=ROUNDS {
        let (before, _) = rss()?;
        reset_peak()?;
        let began = Instant::now();
        let answer = tool.call(&ctx, &json!({"path": "."})).await?;
        let took = began.elapsed();
        let (_, peak) = rss()?;
        let found = format!("{answer:?}").contains("exit_status: 127");
        drop(answer);
        let (after, _) = rss()?;
        println!(
            "round {round}: {took:.0?}, exit status found: {found}; RSS before {before} KiB, peak {peak} KiB (+{} KiB), after {after} KiB ({:+} KiB)",
            peak.saturating_sub(before),
            i128::from(after) - i128::from(before)
        );
    }
    let (end, _) = rss()?;
    println!(
        "RSS at the start {start} KiB, at the end {end} KiB ({:+} KiB)",
        i128::from(end) - i128::from(start)
    );
    Ok(())
}
