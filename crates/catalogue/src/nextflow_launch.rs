//! The Nextflow tools that launch: a run in the background, one autopilot attempt in the
//! foreground, the pipeline's tests, and the test data its test profile names.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

/// The description of a `path` argument naming the pipeline to run.
const PIPELINE: &str = "The pipeline's directory (holding main.nf and nextflow.config); default: the working directory.";

/// The description of `params`.
const PARAMS: &str = "Pipeline parameters, passed as --NAME VALUE (e.g. {\"input\": \"samplesheet.csv\"}). \
     A samplesheet (`input`, or a parameter whose schema entry names a schema) needs a passing \
     prepare_samplesheet_gate first.";

/// The description of `profile`.
const PROFILE: &str = "Comma-separated Nextflow profiles (e.g. test,docker); each must be in the operator's allowlist.";

pub const RUN_BUILT_PIPELINE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::RunBuiltPipeline,
    "Launch a Nextflow pipeline (`nextflow run`) in the background with a trace, and answer at \
     once with the run's name, work directory and how to follow it; the session is told when \
     it ends. Needs the person's approval for the pipeline, an allowed profile and a gated \
     samplesheet. Follow it with check_run_status; diagnose a failure with analyze_run_log.",
    run_built_pipeline,
);

fn run_built_pipeline() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE},
            "profile": {"type": "string", "description": PROFILE},
            "params": {"type": "object", "description": PARAMS},
            "params_file": {"type": "string", "description": "A JSON or YAML file of parameters (-params-file)."},
            "resume": {"type": "boolean", "description": "Resume the last run from its cached tasks (-resume)."},
            "outdir": {"type": "string", "description": "Where results are published (--outdir); default: the pipeline's own default."},
            "launch_dir": {"type": "string", "description": "The directory the run starts in, which receives .nextflow.log, .nextflow/ and work/; default: the pipeline's directory."}
        },
        "additionalProperties": false
    })
}

pub const AUTOPILOT_PIPELINE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::AutopilotPipeline,
    "One attempt at getting a Nextflow pipeline to run: it runs in the foreground (with -resume \
     after the first attempt) and answers the success summary, or the failing task's diagnosis \
     and the pipeline files to change. Repair them, then call it again; attempts are counted, \
     and past max_attempts it stops with the report of every attempt.",
    autopilot_pipeline,
);

fn autopilot_pipeline() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE},
            "profile": {"type": "string", "description": PROFILE},
            "params": {"type": "object", "description": PARAMS},
            "max_attempts": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Attempts allowed for this pipeline in this session; default 3."}
        },
        "additionalProperties": false
    })
}

pub const TEST_PIPELINE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::TestPipeline,
    "Run a Nextflow pipeline's tests: `nf-test test` when the pipeline has nf-test, else a run \
     with its `test` profile; answers each test's outcome (as check_test_result does).",
    test_pipeline,
);

fn test_pipeline() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE},
            "profile": {"type": "string", "description": "Profiles added to the test run (e.g. docker); each must be in the operator's allowlist."}
        },
        "additionalProperties": false
    })
}

pub const CHECK_TEST_RESULT: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CheckTestResult,
    "The outcome of a pipeline's last test_pipeline run, per test: passed, failed (with the \
     assertion and the snapshot diff) or skipped, from nf-test's report or the test run's trace.",
    check_test_result,
);

fn check_test_result() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE}
        },
        "additionalProperties": false
    })
}

pub const FETCH_TEST_DATA: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::FetchTestData,
    "Download the files a pipeline's test configuration names from nf-core's test-datasets into \
     the pipeline's test directory, with sizes and checksums, and point the configuration at \
     the local copy so tests run offline.",
    fetch_test_data,
);

fn fetch_test_data() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE},
            "dataset": {"type": "string", "description": "The test-datasets branch (e.g. rnaseq); default: the one the test configuration names."}
        },
        "additionalProperties": false
    })
}
