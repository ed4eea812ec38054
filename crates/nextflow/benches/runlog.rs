//! `read_log` over a 100 MB `.nextflow.log` of real-shaped records (submissions, task
//! completions, a multi-line debug record now and then), the error block at the end.
//! Target: at most 1 s, in bounded memory (the reader keeps only error records and a tail).
//! Beside it, the floor: the same bytes split into lines and nothing else.

#![expect(clippy::unwrap_used, reason = "a bench fails loudly on a bad fixture")]

use std::fmt::Write;
use std::hint::black_box;

use codaris_nextflow::runlog::read_log;
use criterion::Criterion;

const TARGET_BYTES: usize = 100 * 1024 * 1024;

fn main() {
    let mut log = String::with_capacity(TARGET_BYTES + 4096);
    let mut i = 0u64;
    while log.len() < TARGET_BYTES {
        let hash = format!("{:02x}/{:06x}", i % 256, i & 0xff_ffff);
        writeln!(log, "Mar-02 13:56:{:02}.{:03} [Task submitter] INFO  nextflow.Session - [{hash}] Submitted process > NFCORE_DEMO:DEMO:FASTQC (sample_{i})", i % 60, i % 1000).unwrap();
        writeln!(log, "Mar-02 13:56:{:02}.{:03} [Task monitor] DEBUG n.processor.TaskPollingMonitor - Task completed > TaskHandler[id: {i}; name: NFCORE_DEMO:DEMO:FASTQC (sample_{i}); status: COMPLETED; exit: 0; error: -; workDir: /data/run/work/{hash}b40934822f3c080d59dc7887]", i % 60, i % 1000).unwrap();
        if i.is_multiple_of(50) {
            writeln!(log, "Mar-02 13:56:00.000 [main] DEBUG nextflow.Session - Workflow process names [dsl2]: FASTQC, MULTIQC\n  continuation line one\n  continuation line two").unwrap();
        }
        i += 1;
    }
    log.push_str("Mar-02 13:59:14.280 [Task monitor] ERROR nextflow.processor.TaskProcessor - Error executing process > 'NFCORE_DEMO:DEMO:FASTQC (sample_1)'\n\nCaused by:\n  Process `NFCORE_DEMO:DEMO:FASTQC (sample_1)` terminated with an error exit status (127)\n\nCommand executed:\n\n  fastqc --threads 2 sample_1.fastq.gz\n\nCommand exit status:\n  127\n\nCommand output:\n  (empty)\n\nCommand error:\n  .command.sh: line 2: fastqc: command not found\n\nWork dir:\n  /data/run/work/c5/f00c97b40934822f3c080d59dc7887\n");
    let bytes = log.into_bytes();
    let report = read_log(&bytes[..]).unwrap();
    assert_eq!(report.error.as_ref().and_then(|e| e.exit_status), Some(127));

    let mut c = Criterion::default().sample_size(10).configure_from_args();
    c.bench_function("runlog/read_log_100mb", |b| {
        b.iter(|| black_box(read_log(black_box(&bytes[..])).unwrap()));
    });
    // The floor: the same bytes read line by line through a BufRead and thrown away, the
    // least any reader of a log does.
    c.bench_function("runlog/raw_lines_100mb", |b| {
        b.iter(|| {
            use std::io::BufRead as _;
            let mut reader = black_box(&bytes[..]);
            let mut line = Vec::with_capacity(256);
            let mut lines = 0u64;
            while reader.read_until(b'\n', &mut line).unwrap() > 0 {
                lines += 1;
                line.clear();
            }
            black_box(lines)
        });
    });
    c.final_summary();
}
