//! The Nextflow and nf-core tools for authoring and static checks: a new pipeline from the
//! nf-core template, nf-core's lint and schema checks, the samplesheet gate, the compliance
//! rules with their audit, autofix and remediation plan, and the review pack.

use serde_json::{Value, json};

use crate::entry::CatalogueEntry;
use crate::id::BuiltinTool;

/// The description of a `path` argument naming a pipeline directory.
const PIPELINE_PATH: &str = "The pipeline's directory (the one holding main.nf and nextflow.config); default: the \
     working directory.";

pub const CLONE_NFCORE_BASE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::CloneNfcoreBase,
    "Create a new Nextflow pipeline from the nf-core template (`nf-core pipelines create`, \
     without questions): a git repository with the master, dev and TEMPLATE branches, the \
     nf-core modules, configs, schema and tests. Works offline: template features that need \
     the network (the RO-Crate) are skipped and named. Answers with the new directory, its \
     branches and what to do next.",
    clone_nfcore_base,
);

fn clone_nfcore_base() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The pipeline's short name: lower-case letters and digits, e.g. rnavar (it becomes nf-core/rnavar)."},
            "description": {"type": "string", "description": "One sentence on what the pipeline does."},
            "author": {"type": "string", "description": "The author or authors, as the manifest names them."},
            "outdir": {"type": "string", "description": "The new pipeline's directory, absent or empty; default: nf-core-NAME in the working directory."},
            "skip_features": {"type": "array", "items": {"type": "string"},
                "description": "Template features to leave out, e.g. igenomes, multiqc, fastqc, github, ci, nf-test (rocrate is always left out offline)."}
        },
        "required": ["name", "description", "author"],
        "additionalProperties": false
    })
}

pub const LINT_PIPELINE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::LintPipeline,
    "Lint a Nextflow pipeline with nf-core's own checks (`nf-core pipelines lint`) and return \
     the findings: one line per failed, warned or ignored test with its message and file, \
     and the count that passed. Tests that need the network are skipped offline and said so, \
     never counted as passed.",
    lint_pipeline,
);

fn lint_pipeline() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE_PATH},
            "release": {"type": "boolean", "description": "Also the checks for a release (version numbers consistent, no `dev`); default false."},
            "tests": {"type": "array", "items": {"type": "string"},
                "description": "Only these lint tests, e.g. [\"files_exist\", \"schema_params\"]; default: all."}
        },
        "additionalProperties": false
    })
}

pub const VALIDATE_PIPELINE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ValidatePipeline,
    "Check a pipeline's parameter schema (nextflow_schema.json, with `nf-core pipelines \
     schema lint`) and, given a params file (JSON or YAML), validate those parameters against \
     it. One finding per line, with the parameter and the message.",
    validate_pipeline,
);

fn validate_pipeline() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE_PATH},
            "params_file": {"type": "string", "description": "A JSON or YAML file of parameters (as for -params-file) to validate against the schema."}
        },
        "additionalProperties": false
    })
}

pub const PREPARE_SAMPLESHEET_GATE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::PrepareSamplesheetGate,
    "Validate a samplesheet (CSV, TSV, JSON or YAML) against the pipeline's input schema \
     (assets/schema_input.json) as nf-schema does at launch: required columns, patterns, \
     files that must exist, unique entries. The first line says passed or failed, then one \
     line per error in nf-schema's words and one per warning. A pass is recorded as the \
     gate a pipeline run needs; the gate no longer counts once the sheet or the schema \
     changes.",
    prepare_samplesheet_gate,
);

fn prepare_samplesheet_gate() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE_PATH},
            "samplesheet": {"type": "string", "description": "The samplesheet file. Relative paths inside it are read against the pipeline's directory, as at launch."},
            "schema": {"type": "string", "description": "Another input schema instead of the pipeline's assets/schema_input.json."}
        },
        "required": ["samplesheet"],
        "additionalProperties": false
    })
}

pub const LIST_COMPLIANCE_RULES: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ListComplianceRules,
    "List the compliance rules a pipeline audit checks (built-in and the operator's own): \
     one per line with its id, severity, whether it can be fixed automatically, and what it \
     checks.",
    list_compliance_rules,
);

fn list_compliance_rules() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

pub const RUN_COMPLIANCE_AUTOFIX: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::RunComplianceAutofix,
    "Audit a Nextflow pipeline against the compliance rules (containers pinned, resource \
     labels, no hard-coded paths or credentials, publishDir modes, documented params, \
     manifest, tests, versions, module structure), one finding per line as \
     FILE:LINE: [RULE-ID] SEVERITY: message. With report_only false (only after /remediate \
     or /autofix) it also fixes what can be fixed automatically, as one change, returns the \
     diff, and writes a remediation plan for the rest.",
    run_compliance_autofix,
);

fn run_compliance_autofix() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE_PATH},
            "report_only": {"type": "boolean", "description": "true: the audit only, nothing changes. false: fix and plan (needs /remediate or /autofix)."},
            "rules": {"type": "array", "items": {"type": "string"}, "description": "Only these rule ids; default: every rule."}
        },
        "required": ["report_only"],
        "additionalProperties": false
    })
}

pub const APPLY_REMEDIATION_PLAN: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ApplyRemediationPlan,
    "Apply the remediation plan run_compliance_autofix wrote for a pipeline (after /fix): \
     every item, or the named ones, as patches, all or nothing, then audit again and report \
     what is left.",
    apply_remediation_plan,
);

fn apply_remediation_plan() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE_PATH},
            "plan": {"type": "string", "description": "The plan file; default: the last plan written for this pipeline."},
            "items": {"type": "array", "items": {"type": "integer", "minimum": 1}, "description": "Only these item numbers of the plan; default: every item with a patch."}
        },
        "additionalProperties": false
    })
}

pub const REVIEW_PIPELINE: CatalogueEntry = CatalogueEntry::new(
    BuiltinTool::ReviewPipeline,
    "A review pack of a Nextflow pipeline, read-only, findings first: the compliance \
     findings (errors first), nf-core lint's failures when nf-core is installed, its params \
     and whether the schema documents each, the places a reviewer should read first, then \
     its structure in counts with the files that have findings, and the whole outline when \
     it fits. The pack stays within one answer; its last section, left out, says what did \
     not fit and which call gives it. focus structure gives the outline alone (workflows, \
     processes with containers, inputs and outputs, includes, params, profiles), under a \
     directory when given.",
    review_pipeline,
);

fn review_pipeline() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": PIPELINE_PATH},
            "focus": {"type": "string", "enum": ["security", "lint", "structure"], "description": "Narrow the pack: security (credentials, paths, containers), lint (nf-core lint and the rules) or structure (the reader's whole outline)."},
            "under": {"type": "string", "description": "With focus structure: only the files under this directory of the pipeline (e.g. modules/nf-core), as the pack's left out section suggests for a large pipeline."}
        },
        "additionalProperties": false
    })
}
