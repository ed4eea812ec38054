//! `fetch_test_data` through the real binaries: the daemon configured with a fake
//! test-datasets server on 127.0.0.1 (`[nextflow] test_datasets`), the scripted model finding
//! the tool and calling it on a copy of the nf-core template under `accept_edits`, and the
//! files landing in `tests/data` with the test configuration pointing at them.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use codaris_test_support::nextflow::{copy_tree, nfcore_template};
use codaris_test_support::sandbox::{Sandbox, events, stderr};
use serde_json::json;

const SHEET: &str = "viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv";
const FASTQ: &str = "viralrecon/illumina/amplicon/sample1_R1.fastq.gz";

/// Serves `files` (`GET /<path>`) and 404 for anything else; records what was asked.
fn serve(files: Vec<(String, Vec<u8>)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let path = head.split_whitespace().nth(1).unwrap_or("/")[1..].to_owned();
            log.lock().unwrap().push(path.clone());
            let found = files.iter().find(|(name, _)| *name == path);
            let (status, body) = match found {
                Some((_, body)) => ("200 OK", body.clone()),
                None => ("404 Not Found", b"404: Not Found".to_vec()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    (base, asked)
}

#[test]
fn the_model_fetches_the_templates_test_data_from_the_configured_mirror() {
    let sheet = format!(
        "sample,fastq_1,fastq_2\nSAMPLE1_SE,https://raw.githubusercontent.com/nf-core/test-datasets/{FASTQ},\n"
    );
    let (base, asked) = serve(vec![
        (SHEET.to_owned(), sheet.clone().into_bytes()),
        (FASTQ.to_owned(), b"@r1\nACGT\n+\nIIII\n".to_vec()),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!("[nextflow]\ntest_datasets = \"{base}\"\n"));
    let proj = sandbox.root.path().join("proj");
    copy_tree(&nfcore_template(), &proj.join("pipe"));
    let _daemon = sandbox.start_daemon(&[]);
    let script = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "download nf-core test data"}}]},
        {"tool_calls": [{"name": "fetch_test_data", "args": {"path": "pipe"}}]},
        {"text": "done"}
    ]}]});
    let args = sandbox.run_args(
        &proj,
        &script,
        &["--permission-mode", "accept_edits"],
        "fetch the test data",
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = sandbox.cli(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "fetch_test_data")
        .unwrap_or_else(|| panic!("no fetch_test_data result in {events:#?}"));
    assert_eq!(result["decision"]["verdict"], json!("allow"), "{result}");
    let text = result["output"].as_str().unwrap();
    let pipe = proj.join("pipe").canonicalize().unwrap();
    let data = pipe.join("tests/data");
    let local_sheet = format!(
        "sample,fastq_1,fastq_2\nSAMPLE1_SE,{},\n",
        data.join(FASTQ).display()
    );
    assert!(
        text.starts_with(&format!(
            "fetched 2 files ({} B) from {base} into {}",
            local_sheet.len() + 16,
            data.display()
        )),
        "{text}"
    );
    assert_eq!(
        std::fs::read(data.join(FASTQ)).unwrap(),
        b"@r1\nACGT\n+\nIIII\n"
    );
    assert_eq!(
        std::fs::read_to_string(data.join(SHEET)).unwrap(),
        local_sheet
    );
    let config = std::fs::read_to_string(pipe.join("conf/test.config")).unwrap();
    assert!(
        config.contains(&format!(
            "    pipelines_testdata_base_path = '{}/'\n    input  = params.pipelines_testdata_base_path + '{SHEET}'",
            data.display()
        )),
        "{config}"
    );
    assert_eq!(
        *asked.lock().unwrap(),
        vec![SHEET.to_owned(), FASTQ.to_owned()]
    );
}
