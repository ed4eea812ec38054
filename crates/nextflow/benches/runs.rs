//! The run readers at the sizes: a 100,000-task `trace.txt` summarised from disk
//! (target: at most 200 ms, in bounded memory: rows are streamed, only counts and the pending
//! failures are kept), and the status of a 10,000-task run — history, trace and a work
//! directory per task, a few still running (target: at most 100 ms).

#![expect(clippy::unwrap_used, reason = "a bench fails loudly on a bad fixture")]

use std::fmt::Write;
use std::fs::{self, File};
use std::hint::black_box;
use std::io::BufReader;
use std::path::Path;

use codaris_nextflow::runs::{RunState, TraceSummary, run_status};
use criterion::Criterion;

const HEADER: &str = "task_id\thash\tnative_id\tname\tstatus\texit\tsubmit\tduration\trealtime\t%cpu\tpeak_rss\tpeak_vmem\trchar\twchar\n";

fn hash(i: usize) -> (String, String) {
    let h = format!("{:08x}", i.wrapping_mul(2_654_435_761) as u32);
    (h[..2].to_string(), format!("{}{:024x}", &h[2..], i))
}

fn trace(tasks: usize) -> String {
    let mut t = String::from(HEADER);
    for i in 0..tasks {
        let (a, b) = hash(i);
        let status = if i % 1000 == 999 {
            "FAILED\t1"
        } else {
            "COMPLETED\t0"
        };
        writeln!(
            t,
            "{i}\t{a}/{}\t{}\tNFCORE_DEMO:DEMO:FASTQC (SAMPLE_{i})\t{status}\t2026-12-01 10:00:00.000\t1m 30s\t1m 11s\t94.3%\t611.6 MB\t693.8 MB\t961.2 GB\t6.1 GB",
            &b[..6],
            10_000 + i
        )
        .unwrap();
    }
    t
}

fn launch_dir(dir: &Path, tasks: usize, running: usize) {
    fs::create_dir_all(dir.join(".nextflow")).unwrap();
    fs::write(
        dir.join(".nextflow/history"),
        "2026-12-01 10:00:00\t-\tbusy_bee\t-\t6b9515aba6\te710da1b-ce06-482f-bbcf-987a507f85d1\tnextflow run main.nf -with-trace\n",
    )
    .unwrap();
    fs::write(dir.join("trace.txt"), trace(tasks)).unwrap();
    for i in 0..tasks + running {
        let (a, b) = hash(i);
        let task = dir.join("work").join(a).join(b);
        fs::create_dir_all(&task).unwrap();
        fs::write(task.join(".command.begin"), b"").unwrap();
        if i < tasks {
            fs::write(task.join(".exitcode"), b"0").unwrap();
        } else {
            fs::write(
                task.join(".command.run"),
                "#!/bin/bash\n### name: 'MULTIQC'\n",
            )
            .unwrap();
        }
    }
}

fn main() {
    let scratch = tempfile::tempdir().unwrap();
    let big = scratch.path().join("trace-100k.txt");
    fs::write(&big, trace(100_000)).unwrap();
    let summary = TraceSummary::read(BufReader::new(File::open(&big).unwrap())).unwrap();
    assert_eq!(summary.rows, 100_000);
    assert_eq!(summary.failed, 100);

    let launch = scratch.path().join("launch");
    launch_dir(&launch, 10_000, 3);
    let status = run_status(&launch, None).unwrap();
    assert_eq!(status.state, RunState::Running);
    assert_eq!(status.tasks.running, 3, "{}", status.render());
    assert_eq!(status.tasks.completed + status.tasks.failed, 10_000);

    let mut c = Criterion::default().configure_from_args();
    c.bench_function("runs/trace_100000_tasks", |b| {
        b.iter(|| {
            let file = BufReader::new(File::open(&big).unwrap());
            black_box(TraceSummary::read(file).unwrap())
        })
    });
    c.bench_function("runs/status_10000_tasks", |b| {
        b.iter(|| black_box(run_status(black_box(&launch), None).unwrap()))
    });
    c.final_summary();
}
