//! `fetch_test_data` against a fake nf-core test-datasets server on 127.0.0.1 (it serves the
//! raw files of a map and can fail one with a status or cut its body short); nothing here
//! reaches the internet. The pipeline is a copy of the real nf-core template.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use codaris_test_support::nextflow::{copy_tree, nfcore_template};
use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Content, Fence, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

const SHEET: &str = "viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv";
const NFCORE: &str = "https://raw.githubusercontent.com/nf-core/test-datasets/";

/// How the fake server answers one path.
#[derive(Clone)]
enum Answer {
    File(Vec<u8>),
    Status(u16),
    /// The full Content-Length announced, only this many bytes sent, then the connection closed.
    Cut(Vec<u8>, usize),
}

/// A fake raw.githubusercontent.com: `GET /<branch>/<path>` answered from a map.
struct FakeDatasets {
    base: String,
    answers: Arc<Mutex<BTreeMap<String, Answer>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl FakeDatasets {
    fn start(files: &[(&str, &[u8])]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let answers: BTreeMap<String, Answer> = files
            .iter()
            .map(|(path, body)| ((*path).to_owned(), Answer::File(body.to_vec())))
            .collect();
        let answers = Arc::new(Mutex::new(answers));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (map, log) = (answers.clone(), asked.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .trim_start_matches('/')
                    .to_owned();
                log.lock().unwrap().push(path.clone());
                let answer = map.lock().unwrap().get(&path).cloned();
                let (status, body, sent) = match answer {
                    Some(Answer::File(body)) => (200, body.clone(), body.len()),
                    Some(Answer::Status(code)) => (code, b"no".to_vec(), 2),
                    Some(Answer::Cut(body, sent)) => (200, body, sent),
                    None => (404, b"404: Not Found".to_vec(), 14),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(&body[..sent]);
            }
        });
        Self {
            base,
            answers,
            asked,
        }
    }

    fn answer(&self, path: &str, answer: Answer) {
        self.answers.lock().unwrap().insert(path.to_owned(), answer);
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

/// The viralrecon sheet as test-datasets has it, its fastqs named on nf-core's own base (the
/// server is a mirror of it), and one cell off the base.
fn sheet() -> String {
    format!(
        "sample,fastq_1,fastq_2\n\
         SAMPLE1_PE,{NFCORE}viralrecon/illumina/amplicon/sample1_R1.fastq.gz,{NFCORE}viralrecon/illumina/amplicon/sample1_R2.fastq.gz\n\
         SAMPLE2_SE,{NFCORE}viralrecon/illumina/amplicon/sample2_R1.fastq.gz,\n\
         SAMPLE3_SE,https://example.org/elsewhere/sample3_R1.fastq.gz,\n"
    )
}

fn fastq(name: &str) -> Vec<u8> {
    format!("@{name}\nACGT\n+\nIIII\n").into_bytes()
}

fn server() -> FakeDatasets {
    let sheet = sheet();
    let (r1, r2, s2) = (fastq("r1"), fastq("r2"), fastq("s2"));
    FakeDatasets::start(&[
        (SHEET, sheet.as_bytes()),
        ("viralrecon/illumina/amplicon/sample1_R1.fastq.gz", &r1),
        ("viralrecon/illumina/amplicon/sample1_R2.fastq.gz", &r2),
        ("viralrecon/illumina/amplicon/sample2_R1.fastq.gz", &s2),
    ])
}

struct Env {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    pipe: PathBuf,
    ctx: ToolContext,
    tool: Arc<dyn Tool>,
}

fn env(server: &FakeDatasets) -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let pipe = root.join("demo");
    copy_tree(&nfcore_template(), &pipe);
    std::fs::create_dir_all(base.join("outside")).unwrap();
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]),
        workspace: root,
        read: Default::default(),
    };
    let setup = NextflowSetup {
        test_datasets: server.base.clone(),
        ..NextflowSetup::default()
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let tool = nextflow_tools(&Arc::new(pools), &setup, Arc::new(MemoryGates::default()))
        .into_iter()
        .find(|t| t.name() == "fetch_test_data")
        .unwrap();
    Env {
        _tmp: tmp,
        base,
        pipe,
        ctx,
        tool,
    }
}

impl Env {
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let output = self.tool.call(&self.ctx, &args).await?;
        Ok(output
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text(text) => Some(text.clone()),
                Content::Image { .. } => None,
            })
            .collect())
    }
}

fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every path below `dir` with its kind and contents, for "nothing changed".
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    format!("link {:?}", std::fs::read_link(&path).unwrap()),
                );
            } else if meta.is_dir() {
                out.insert(rel, "dir".to_owned());
                stack.push(path);
            } else {
                out.insert(rel, sha256(&std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_templates_test_data_lands_with_checksums_and_the_config_points_at_it() {
    let server = server();
    let env = env(&server);
    let text = env.call(json!({"path": "demo"})).await.unwrap();
    let data = env.pipe.join("tests/data");
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("fetched 4 files ("), "{text}");
    assert!(
        first.ends_with(&format!("from {} into {}", server.base, data.display())),
        "{text}"
    );
    for name in ["sample1_R1", "sample1_R2", "sample2_R1"] {
        let local = data.join(format!("viralrecon/illumina/amplicon/{name}.fastq.gz"));
        let body = std::fs::read(&local).unwrap();
        let short = match name {
            "sample1_R1" => "r1",
            "sample1_R2" => "r2",
            _ => "s2",
        };
        assert_eq!(body, fastq(short));
        let line = format!(
            "{}  {} B  sha256:{}  {}viralrecon/illumina/amplicon/{name}.fastq.gz",
            local.display(),
            body.len(),
            sha256(&body),
            server.base
        );
        assert!(text.contains(&line), "{line}\nin\n{text}");
    }
    // The local sheet names the local fastqs by absolute path; the off-base cell stays.
    let local_sheet = std::fs::read_to_string(data.join(SHEET)).unwrap();
    let expected = sheet().replace(NFCORE, &format!("{}/", data.display()));
    assert_eq!(local_sheet, expected);
    assert!(
        text.contains(&format!("sha256:{}", sha256(expected.as_bytes()))),
        "{text}"
    );
    assert!(text.contains("samplesheet viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv rewritten: 3 cells"), "{text}");
    // The test config: one line added, every other byte as it was.
    let original = std::fs::read_to_string(nfcore_template().join("conf/test.config")).unwrap();
    let config = std::fs::read_to_string(env.pipe.join("conf/test.config")).unwrap();
    let added = format!("    pipelines_testdata_base_path = '{}/'\n", data.display());
    assert_eq!(config.replacen(&added, "", 1), original);
    assert!(config.contains(&added));
    assert!(
        text.contains(&format!(
            "28: pipelines_testdata_base_path = '{}/' (added)",
            data.display()
        )),
        "{text}"
    );
    // nextflow.config is left alone, the remote base kept for test_full and real runs.
    assert_eq!(
        std::fs::read(env.pipe.join("nextflow.config")).unwrap(),
        std::fs::read(nfcore_template().join("nextflow.config")).unwrap()
    );
    // The URL off the base is listed, and never asked for.
    assert!(
        text.contains(
            "`https://example.org/elsewhere/sample3_R1.fastq.gz` not under the test-datasets base"
        ),
        "{text}"
    );
    assert_eq!(server.asked().len(), 4, "{:?}", server.asked());
    // No staging directory is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(env.pipe.join("tests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".fetch_test_data"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A second call finds the config pointing at the local copies and fetches nothing.
    let before = tree(&env.pipe);
    let again = env.call(json!({"path": "demo"})).await.unwrap();
    assert!(again.starts_with("fetched 0 files (0 B)"), "{again}");
    assert!(again.contains("already local:"), "{again}");
    assert!(
        again.contains(&format!("{} (present)", data.join(SHEET).display())),
        "{again}"
    );
    assert!(again.contains("nothing to fetch"), "{again}");
    assert_eq!(tree(&env.pipe), before);
    assert_eq!(server.asked().len(), 4);
}

#[tokio::test]
async fn a_failing_download_leaves_the_pipeline_byte_identical() {
    let server = server();
    let env = env(&server);
    let before = tree(&env.pipe);
    server.answer(
        "viralrecon/illumina/amplicon/sample1_R2.fastq.gz",
        Answer::Status(500),
    );
    let err = env.call(json!({"path": "demo"})).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("sample1_R2.fastq.gz` answered 500"), "{text}");
    assert!(text.contains("nothing was changed"), "{text}");
    assert_eq!(tree(&env.pipe), before);

    server.answer(
        "viralrecon/illumina/amplicon/sample1_R2.fastq.gz",
        Answer::Cut(vec![b'A'; 10_000], 1_000),
    );
    let err = env.call(json!({"path": "demo"})).await.unwrap_err();
    assert!(err.to_string().contains("broke off"), "{err}");
    assert_eq!(tree(&env.pipe), before);

    server.answer(SHEET, Answer::Status(404));
    let err = env.call(json!({"path": "demo"})).await.unwrap_err();
    assert!(err.to_string().contains("answered 404"), "{err}");
    assert_eq!(tree(&env.pipe), before);
}

#[tokio::test]
async fn a_failure_replaces_nothing_already_there() {
    let server = server();
    let env = env(&server);
    // An earlier copy of one file is kept when the new download fails.
    let old = env
        .pipe
        .join("tests/data/viralrecon/illumina/amplicon/sample1_R1.fastq.gz");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::write(&old, "old copy").unwrap();
    let before = tree(&env.pipe);
    server.answer(
        "viralrecon/illumina/amplicon/sample2_R1.fastq.gz",
        Answer::Status(404),
    );
    assert!(env.call(json!({"path": "demo"})).await.is_err());
    assert_eq!(tree(&env.pipe), before);
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "old copy");
}

#[tokio::test]
async fn the_dataset_filter_keeps_its_branch_and_refuses_one_the_config_does_not_name() {
    let server = server();
    let env = env(&server);
    let before = tree(&env.pipe);
    let err = env
        .call(json!({"path": "demo", "dataset": "rnaseq"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "fetch_test_data: `conf/test.config` names no file of the dataset `rnaseq`; it names `viralrecon`"
    );
    assert_eq!(tree(&env.pipe), before);
    assert!(server.asked().is_empty());
    let text = env
        .call(json!({"path": "demo", "dataset": "viralrecon"}))
        .await
        .unwrap();
    assert!(text.starts_with("fetched 4 files"), "{text}");
}

#[tokio::test]
async fn full_urls_off_the_base_are_listed_and_not_fetched() {
    let server = server();
    let env = env(&server);
    std::fs::write(
        env.pipe.join("conf/test.config"),
        format!(
            "params {{\n    input = '{NFCORE}{SHEET}'\n    busco_db = 'https://busco-data.ezlab.org/v5/data/lineages/bacteria_odb10.2024-01-08.tar.gz'\n}}\n"
        ),
    )
    .unwrap();
    let text = env.call(json!({"path": "demo"})).await.unwrap();
    let data = env.pipe.join("tests/data");
    assert!(text.starts_with("fetched 4 files"), "{text}");
    assert!(
        text.contains("params.busco_db (conf/test.config:3): `https://busco-data.ezlab.org/"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(env.pipe.join("conf/test.config")).unwrap(),
        format!(
            "params {{\n    input = '{}/{SHEET}'\n    busco_db = 'https://busco-data.ezlab.org/v5/data/lineages/bacteria_odb10.2024-01-08.tar.gz'\n}}\n",
            data.display()
        )
    );
    assert!(server.asked().iter().all(|p| p.starts_with("viralrecon/")));
}

#[tokio::test]
async fn paths_outside_the_fence_and_symlinks_out_of_it_are_refused() {
    let server = server();
    let env = env(&server);
    let outside = env.base.join("outside");
    let err = env
        .call(json!({"path": outside.to_string_lossy()}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("outside every allowed root"),
        "{err}"
    );
    let err = env.call(json!({"path": "demo/../.."})).await.unwrap_err();
    assert!(
        err.to_string().contains("outside every allowed root"),
        "{err}"
    );

    // `tests/` swapped for a symlink out of the fence: nothing is written there.
    std::fs::remove_dir_all(env.pipe.join("tests")).unwrap();
    std::os::unix::fs::symlink(&outside, env.pipe.join("tests")).unwrap();
    let before = tree(&env.pipe);
    let err = env.call(json!({"path": "demo"})).await.unwrap_err();
    assert!(
        err.to_string().contains("is reached through a symlink"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(tree(&env.pipe), before);
    assert!(server.asked().is_empty());

    // `tests/data` a symlink into `.git`: refused too.
    std::fs::remove_file(env.pipe.join("tests")).unwrap();
    std::fs::create_dir_all(env.pipe.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(env.pipe.join("tests")).unwrap();
    std::os::unix::fs::symlink("../.git/hooks", env.pipe.join("tests/data")).unwrap();
    let err = env.call(json!({"path": "demo"})).await.unwrap_err();
    assert!(err.to_string().contains(".git"), "{err}");
    assert_eq!(
        std::fs::read_dir(env.pipe.join(".git/hooks"))
            .unwrap()
            .count(),
        0
    );
}
