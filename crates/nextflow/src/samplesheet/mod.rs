//! The samplesheet gate: a sheet (CSV, TSV, JSON or YAML) validated against a pipeline's
//! `assets/schema_input.json` with nf-schema's semantics and in nf-schema's words, before a
//! run is launched on it.
//!
//! Pure apart from reading the two files and looking at the paths the sheet names (the
//! `file-path`, `directory-path`, `path` and `file-path-pattern` formats and `exists`). No
//! network: remote URIs are not checked, and the report says so.
//!
//! What it does not do: convert the sheet to channel values (`samplesheetToList`), apply
//! schema `default`s, or validate pipeline parameters (`validate_pipeline` does).
//!
//! ```no_run
//! use codaris_nextflow::samplesheet::{GateRequest, prepare_samplesheet_gate};
//! let report = prepare_samplesheet_gate(&GateRequest::new("/pipelines/demo", "samples.csv"))?;
//! print!("{}", report.render()); // "passed\n" or "failed\n-> Entry 1: …"
//! # Ok::<(), codaris_nextflow::samplesheet::GateError>(())
//! ```

mod error;
mod keywords;
mod messages;
mod paths;
mod read;
mod report;
mod schema;

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use error::GateError;
pub use read::SheetFormat;
pub use report::{Finding, GateReport};

use paths::PathChecker;
use read::Sheet;
use schema::SheetSchema;

/// The largest sheet the gate reads: far above any real samplesheet (10,000 rows of the
/// template's three columns are about 1.5 MB), low enough to refuse a runaway file quickly.
pub const MAX_SHEET_BYTES: u64 = 32 * 1024 * 1024;
/// The largest schema the gate reads.
pub const MAX_SCHEMA_BYTES: u64 = 4 * 1024 * 1024;

/// Where the nf-core template keeps the samplesheet schema.
pub const DEFAULT_SCHEMA: &str = "assets/schema_input.json";

/// What `prepare_samplesheet_gate {path, samplesheet, schema?}` is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRequest {
    /// The pipeline directory (`path`).
    pub pipeline_dir: PathBuf,
    /// The sheet (`samplesheet`); a relative one is taken from the launch directory.
    pub samplesheet: PathBuf,
    /// The schema (`schema`); a relative one is taken from the pipeline directory. `None`:
    /// the one `nextflow_schema.json` names for `--input`, else [`DEFAULT_SCHEMA`].
    pub schema: Option<PathBuf>,
    /// Where the run will be launched: relative paths in the sheet resolve against it.
    /// `None`: the pipeline directory.
    pub launch_dir: Option<PathBuf>,
    /// nf-schema's `validation.lenientMode` (default off): a `string` field then also takes
    /// a number or boolean cell. Off, `123` in a string column fails, as it does in a run.
    pub lenient_types: bool,
    /// The folders the gate may look in for the files a sheet names (the session's roots);
    /// empty: anywhere. A named path that leads out of them fails its entry unlooked-at.
    pub confine: Vec<PathBuf>,
}

impl GateRequest {
    /// A request with the defaults: schema from the pipeline, launched in the pipeline dir.
    pub fn new(pipeline_dir: impl Into<PathBuf>, samplesheet: impl Into<PathBuf>) -> Self {
        GateRequest {
            pipeline_dir: pipeline_dir.into(),
            samplesheet: samplesheet.into(),
            schema: None,
            launch_dir: None,
            lenient_types: false,
            confine: Vec::new(),
        }
    }

    /// Validate against this schema instead of the pipeline's.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<PathBuf>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Resolve relative paths against this launch directory.
    #[must_use]
    pub fn launch_dir(mut self, launch_dir: impl Into<PathBuf>) -> Self {
        self.launch_dir = Some(launch_dir.into());
        self
    }

    /// Confine the file checks to `roots` (absolute, symlinks resolved).
    #[must_use]
    pub fn confine_to(mut self, roots: Vec<PathBuf>) -> Self {
        self.confine = roots;
        self
    }

    /// Set nf-schema's lenient type mode.
    #[must_use]
    pub fn lenient_types(mut self, lenient: bool) -> Self {
        self.lenient_types = lenient;
        self
    }

    /// The launch directory in force.
    pub fn effective_launch_dir(&self) -> &Path {
        self.launch_dir.as_deref().unwrap_or(&self.pipeline_dir)
    }

    /// The sheet's path, resolved against the launch directory.
    pub fn sheet_path(&self) -> PathBuf {
        self.effective_launch_dir().join(&self.samplesheet)
    }

    /// The schema's path: the one given (from the pipeline directory), else the one the
    /// pipeline's `nextflow_schema.json` names for `input`, else [`DEFAULT_SCHEMA`].
    pub fn schema_path(&self) -> PathBuf {
        self.pipeline_dir.join(self.schema_rel())
    }

    /// The schema as given or derived, relative to the pipeline directory unless absolute.
    fn schema_rel(&self) -> PathBuf {
        match &self.schema {
            Some(schema) => schema.clone(),
            None => input_schema_of(&self.pipeline_dir).unwrap_or_else(|| DEFAULT_SCHEMA.into()),
        }
    }

    /// How the schema is opened: an absolute one the caller gave as named; any other (the
    /// default, or the one `nextflow_schema.json` names) beneath the pipeline directory.
    fn schema_source(&self) -> From<'_> {
        match &self.schema {
            Some(schema) if schema.is_absolute() => From::Caller(schema),
            _ => From::Pipeline {
                dir: &self.pipeline_dir,
                rel: self.schema_rel(),
            },
        }
    }
}

/// The digest a gate is bound to: lowercase hex of the SHA-256 of `bytes`. The run tools
/// compare a sheet's and a schema's bytes now against the gate's with this same function.
pub fn sha256_hex(bytes: &[u8]) -> String {
    report::hex(&Sha256::digest(bytes))
}

/// Runs the gate: reads the sheet and the schema and validates one against the other.
///
/// # Errors
///
/// [`GateError`] when the gate cannot validate at all: a file missing, unreadable, too large,
/// not UTF-8 or not parseable, a schema nf-schema would not load, or a CSV/TSV sheet for a
/// schema with array or object fields. A sheet that breaks the schema is `Ok`, and failed.
pub fn prepare_samplesheet_gate(request: &GateRequest) -> Result<GateReport, GateError> {
    let sheet_path = request.sheet_path();
    let schema_path = request.schema_path();
    let sheet = read_capped(From::Caller(&sheet_path), MAX_SHEET_BYTES)?;
    let schema = read_capped(request.schema_source(), MAX_SCHEMA_BYTES)?;
    validate_within(
        &sheet_path,
        &sheet,
        &schema_path,
        &schema,
        request.effective_launch_dir(),
        request.lenient_types,
        &request.confine,
    )
}

/// [`prepare_samplesheet_gate`] over the sheet's and the schema's bytes, read by the caller
/// (the tools crate reads them through its fence) from [`GateRequest::sheet_path`] and
/// [`GateRequest::schema_path`].
///
/// # Errors
///
/// As [`prepare_samplesheet_gate`], less the reading.
pub fn gate_over(
    request: &GateRequest,
    sheet_bytes: &[u8],
    schema_bytes: &[u8],
) -> Result<GateReport, GateError> {
    validate_within(
        &request.sheet_path(),
        sheet_bytes,
        &request.schema_path(),
        schema_bytes,
        request.effective_launch_dir(),
        request.lenient_types,
        &request.confine,
    )
}

/// The gate over bytes already read (the daemon may hold them, to hash exactly what it
/// validated). `sheet_path` names the sheet in messages and picks its format by extension;
/// `launch_dir` is where relative paths in the sheet resolve.
///
/// # Errors
///
/// As [`prepare_samplesheet_gate`], less the reading.
pub fn validate_samplesheet(
    sheet_path: &Path,
    sheet_bytes: &[u8],
    schema_path: &Path,
    schema_bytes: &[u8],
    launch_dir: &Path,
    lenient_types: bool,
) -> Result<GateReport, GateError> {
    validate_within(
        sheet_path,
        sheet_bytes,
        schema_path,
        schema_bytes,
        launch_dir,
        lenient_types,
        &[],
    )
}

/// [`validate_samplesheet`] with the file checks confined to `confine` (empty: anywhere).
fn validate_within(
    sheet_path: &Path,
    sheet_bytes: &[u8],
    schema_path: &Path,
    schema_bytes: &[u8],
    launch_dir: &Path,
    lenient_types: bool,
    confine: &[PathBuf],
) -> Result<GateReport, GateError> {
    let size = sheet_bytes.len() as u64;
    if size > MAX_SHEET_BYTES {
        return Err(GateError::TooLarge {
            path: sheet_path.to_path_buf(),
            size,
            limit: MAX_SHEET_BYTES,
        });
    }
    let schema = SheetSchema::parse(schema_path, schema_bytes)?;
    let (text, bom) = read::decode(sheet_path, sheet_bytes)?;
    let format = read::detect_format(sheet_path, text)?;
    if let (Some(extension), Some(field)) = (
        matches!(format, SheetFormat::Csv | SheetFormat::Tsv).then(|| format.name()),
        schema.nested_fields.first(),
    ) {
        return Err(GateError::NestedFieldInDelimited {
            extension,
            field: field.clone(),
        });
    }
    let sheet = read::read_sheet(sheet_path, text, format, bom)?;

    let mut errors = sheet_level_errors(&sheet);
    let checker = Arc::new(
        PathChecker::new(launch_dir.to_path_buf(), confine.to_vec()).beside(sheet_path.parent()),
    );
    let mut options = jsonschema::options()
        .with_keyword("type", keywords::type_factory(lenient_types))
        .with_keyword(
            keywords::PATH_KEYWORD,
            keywords::path_factory(Arc::clone(&checker)),
        )
        .should_validate_formats(true);
    // The path formats are checked by the path keyword; to the validator they always hold.
    for format in schema::PATH_FORMATS {
        options = options.with_format(format, |_: &str| true);
    }
    let validator = options
        .build(&schema::with_path_markers(&schema.value))
        .map_err(|e| GateError::SchemaCompile {
            path: schema_path.to_path_buf(),
            message: e.to_string(),
        })?;
    let instance = Value::Array(sheet.entries);
    let ctx = messages::Context {
        schema: &schema.value,
        instance: &instance,
        written: &sheet.written,
    };
    let mut findings = messages::translate_all(validator.iter_errors(&instance), &ctx);
    findings.extend(duplicate_entries(&schema, &instance, &sheet.written));
    // Entry by entry, fields in the schema's order, the entry's own errors after its fields.
    findings.sort_by_key(|f| {
        (
            f.entry.unwrap_or(0),
            f.field.as_deref().map_or(usize::MAX, |name| {
                schema.field_rank(name.split('/').next().unwrap_or(name))
            }),
        )
    });
    errors.extend(findings);

    let rows = instance.as_array().map_or(0, Vec::len);
    let warnings = warnings(
        sheet_path,
        &schema,
        &sheet.columns,
        &sheet.unnamed_columns,
        &sheet.overlong,
        &instance,
    );
    Ok(GateReport {
        sheet_path: sheet_path.to_path_buf(),
        schema_path: schema_path.to_path_buf(),
        format,
        rows,
        errors,
        warnings,
        sheet_sha256: sha256_hex(sheet_bytes),
        schema_sha256: sha256_hex(schema_bytes),
    })
}

/// Problems of the sheet as a whole, which nf-schema would trip over before or instead of
/// reporting them plainly.
fn sheet_level_errors(sheet: &Sheet) -> Vec<Finding> {
    let mut errors = Vec::new();
    let sheet_error = |message: String| Finding {
        entry: None,
        field: None,
        value: None,
        message,
        custom: None,
    };
    // Nextflow keeps the mark as part of the first column's name (nextflow-io/nextflow#3596),
    // so the run would miss that column in every entry; YAML readers drop it.
    if sheet.bom && sheet.format != SheetFormat::Yaml {
        let first = sheet.columns.first().map_or("", String::as_str);
        errors.push(sheet_error(format!(
            "the samplesheet starts with a UTF-8 byte-order mark, which Nextflow reads as part of the first column's name '{first}': save it without the mark"
        )));
    }
    for name in &sheet.duplicate_columns {
        errors.push(sheet_error(format!(
            "the header names the column '{name}' more than once: Nextflow keeps only the last"
        )));
    }
    if sheet.entries.is_empty() {
        // nf-schema accepts an empty list; a run launched on it would process nothing.
        errors.push(sheet_error("the samplesheet has no entries".into()));
    }
    errors
}

/// `uniqueEntries` and per-field `unique`: every entry that repeats an earlier one's values,
/// in nf-schema's words ("Entry 3: Detected duplicate entries: [sample:a, fastq_1:b]").
fn duplicate_entries(
    schema: &SheetSchema,
    instance: &Value,
    written: &[read::Written],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(entries) = instance.as_array() else {
        return out;
    };
    for set in &schema.unique_sets {
        let mut seen: HashSet<Vec<(String, String)>> = HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            let Some(map) = entry.as_object() else {
                continue;
            };
            let tuple: Vec<(String, String)> = set
                .fields
                .iter()
                .filter_map(|field| {
                    let value = map.get(field)?;
                    let text = read::written_text(written, i, field)
                        .map(str::to_owned)
                        .unwrap_or_else(|| match value {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        });
                    Some((field.clone(), text))
                })
                .collect();
            if tuple.is_empty() {
                continue;
            }
            if seen.contains(&tuple) {
                let listed: Vec<String> = tuple.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                out.push(Finding {
                    entry: Some(i + 1),
                    field: None,
                    value: None,
                    message: format!("Detected duplicate entries: [{}]", listed.join(", ")),
                    custom: set.custom.clone(),
                });
            } else {
                seen.insert(tuple);
            }
        }
    }
    out
}

fn warnings(
    sheet_path: &Path,
    schema: &SheetSchema,
    columns: &[String],
    unnamed: &[usize],
    overlong: &[(usize, usize)],
    instance: &Value,
) -> Vec<String> {
    let mut out = Vec::new();
    if !schema.property_order.is_empty() {
        let unknown: Vec<&str> = columns
            .iter()
            .filter(|c| !schema.knows(c))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            out.push(format!(
                "Found the following unidentified headers in {}: {} (ignored)",
                sheet_path.display(),
                unknown.join(", ")
            ));
        }
    }
    for position in unnamed {
        out.push(format!(
            "column {position} of the header has no name; its values are ignored"
        ));
    }
    for (entry, extra) in overlong {
        out.push(format!(
            "Entry {entry}: {extra} value(s) past the header's last column are ignored"
        ));
    }
    let remote = instance
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|entry| {
            schema
                .path_fields
                .iter()
                .filter_map(|f| entry.get(f)?.as_str())
        })
        .filter(|v| paths::is_remote(v))
        .count();
    if remote > 0 {
        out.push(format!(
            "{remote} remote path(s) (s3://, gs://, az://, http(s)://) not checked: the gate has no network"
        ));
    }
    out
}

/// Where a file the gate reads comes from, which decides how it is opened.
enum From<'a> {
    /// Named by the caller (judged as a path argument): a symlink in its place is not followed.
    Caller(&'a Path),
    /// Derived from the pipeline (`nextflow_schema.json`, the schema it names): opened beneath
    /// the pipeline directory, so a cloned pipeline's symlink to a secret leads nowhere.
    Pipeline { dir: &'a Path, rel: PathBuf },
}

/// The file's bytes, refusing a directory or anything over `limit` before reading it all.
fn read_capped(from: From<'_>, limit: u64) -> Result<Vec<u8>, GateError> {
    let path = match &from {
        From::Caller(path) => path.to_path_buf(),
        From::Pipeline { dir, rel } => dir.join(rel),
    };
    let io = |source| GateError::Io {
        path: path.clone(),
        source,
    };
    let opened = match &from {
        From::Caller(path) => crate::files::open_nofollow(path),
        From::Pipeline { dir, rel } => crate::files::open_beneath(dir, rel),
    };
    let file = match opened {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::InvalidInput => {
            return Err(GateError::NotAFile { path });
        }
        Err(err) => return Err(io(err)),
    };
    let meta = file.metadata().map_err(io)?;
    let too_large = |size| GateError::TooLarge {
        path: path.clone(),
        size,
        limit,
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow between the look and the read: never read past the limit.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The samplesheet schema `nextflow_schema.json` names for the `input` parameter, as nf-schema
/// finds it (`"schema": "assets/schema_input.json"`).
fn input_schema_of(pipeline_dir: &Path) -> Option<PathBuf> {
    let from = From::Pipeline {
        dir: pipeline_dir,
        rel: PathBuf::from("nextflow_schema.json"),
    };
    let bytes = read_capped(from, MAX_SCHEMA_BYTES).ok()?;
    let schema: Value = serde_json::from_slice(&bytes).ok()?;
    let from = |props: &Value| props.pointer("/input/schema")?.as_str().map(PathBuf::from);
    if let Some(found) = schema.get("properties").and_then(from) {
        return Some(found);
    }
    ["$defs", "definitions", "defs"].iter().find_map(|key| {
        schema
            .get(*key)?
            .as_object()?
            .values()
            .find_map(|group| group.get("properties").and_then(from))
    })
}
