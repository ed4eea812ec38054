//! A `nextflow run` command line as Codaris launches it, and what must hold before it does:
//! the run's name chosen up front (so the answer can name the run before Nextflow starts),
//! parameters passed so no value is read as an option, and the parameters that name a
//! samplesheet, which must have a passing gate.
//!
//! Pure: no process, no clock. The tools run the line in the session's sandbox.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Parameters Nextflow itself reads at launch; passing them as `--NAME` would be a second,
/// conflicting spelling of an option the tool sets (`outdir` is its own argument).
const RESERVED_PARAMS: [&str; 1] = ["outdir"];

/// The largest params file read for its samplesheet parameters.
const MAX_PARAMS_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a launch cannot be built; each is one sentence for the model.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LaunchError {
    #[error("parameter name `{name}` is not one Nextflow accepts (letters, digits, `_`, `-`, `.`)")]
    BadParamName { name: String },
    #[error("parameter `{name}` is {kind}; give nested values in a params_file, scalars in params")]
    NestedParam { name: String, kind: &'static str },
    #[error("parameter `{name}` is set by its own argument; use `{name}` instead of params.{name}")]
    Reserved { name: String },
    #[error("params_file `{path}`: {reason}")]
    ParamsFile { path: PathBuf, reason: String },
}

/// One launch of `nextflow run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The pipeline's directory (its real path).
    pub pipeline: PathBuf,
    /// Where the run starts: it receives `.nextflow.log`, `.nextflow/` and `work/`.
    pub launch_dir: PathBuf,
    /// `-name`, chosen by Codaris.
    pub run_name: String,
    /// `-with-trace FILE`.
    pub trace: PathBuf,
    /// `-profile a,b`, when any.
    pub profiles: Vec<String>,
    /// `--NAME=VALUE` pairs, in the order given.
    pub params: Vec<(String, String)>,
    pub params_file: Option<PathBuf>,
    pub resume: bool,
    pub outdir: Option<PathBuf>,
}

impl LaunchPlan {
    /// A plan with Nextflow's defaults: no profile, no parameters, the trace
    /// `trace-NAME.txt` in the launch directory.
    pub fn new(pipeline: &Path, launch_dir: &Path, run_name: &str) -> Self {
        Self {
            pipeline: pipeline.to_path_buf(),
            launch_dir: launch_dir.to_path_buf(),
            run_name: run_name.to_owned(),
            trace: launch_dir.join(format!("trace-{run_name}.txt")),
            profiles: Vec::new(),
            params: Vec::new(),
            params_file: None,
            resume: false,
            outdir: None,
        }
    }

    /// The arguments after the program: `run PIPELINE -name … -with-trace FILE -ansi-log
    /// false …`, then the parameters as `--NAME=VALUE` (one word each, so a value starting
    /// with `-` is never read as an option).
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![
            "run".to_owned(),
            self.pipeline.display().to_string(),
            "-name".to_owned(),
            self.run_name.clone(),
            "-with-trace".to_owned(),
            self.trace.display().to_string(),
            "-ansi-log".to_owned(),
            "false".to_owned(),
        ];
        if !self.profiles.is_empty() {
            args.push("-profile".to_owned());
            args.push(self.profiles.join(","));
        }
        if let Some(file) = &self.params_file {
            args.push("-params-file".to_owned());
            args.push(file.display().to_string());
        }
        if self.resume {
            args.push("-resume".to_owned());
        }
        if let Some(outdir) = &self.outdir {
            args.push(format!("--outdir={}", outdir.display()));
        }
        args.extend(
            self.params
                .iter()
                .map(|(name, value)| format!("--{name}={value}")),
        );
        args
    }

    /// The environment the run gets beside the daemon's: plain console lines.
    pub fn env(&self) -> [(&'static str, &'static str); 1] {
        [("NXF_ANSI_LOG", "false")]
    }

    /// `nextflow run …` as a person would type it, for answers and cards.
    pub fn display(&self) -> String {
        let mut line = String::from("nextflow");
        for arg in self.args() {
            line.push(' ');
            if arg.contains([' ', '\'', '"', '$', '`', '\\']) {
                line.push_str(&format!("'{}'", arg.replace('\'', r"'\''")));
            } else {
                line.push_str(&arg);
            }
        }
        line
    }
}

/// A run name Nextflow accepts (`^[a-z](?:[a-z\d]|[-_](?=[a-z\d])){0,79}$`) and history rows
/// tell apart: `codaris-` and eight hex digits of `entropy`.
pub fn run_name(entropy: u64) -> String {
    format!("codaris-{:08x}", entropy & 0xffff_ffff)
}

/// The model's `params` object as `--NAME=VALUE` pairs: strings as they are, numbers and
/// booleans as Nextflow reads them back (`true`, `3`, `0.5`).
pub fn param_pairs(params: &Map<String, Value>) -> Result<Vec<(String, String)>, LaunchError> {
    let mut pairs = Vec::with_capacity(params.len());
    for (name, value) in params {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            return Err(LaunchError::BadParamName { name: name.clone() });
        }
        if RESERVED_PARAMS.contains(&name.as_str()) {
            return Err(LaunchError::Reserved { name: name.clone() });
        }
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Bool(flag) => flag.to_string(),
            Value::Number(number) => number.to_string(),
            Value::Null => "null".to_owned(),
            Value::Array(_) => {
                return Err(LaunchError::NestedParam {
                    name: name.clone(),
                    kind: "a list",
                });
            }
            Value::Object(_) => {
                return Err(LaunchError::NestedParam {
                    name: name.clone(),
                    kind: "an object",
                });
            }
        };
        pairs.push((name.clone(), text));
    }
    Ok(pairs)
}

/// The parameters of the pipeline that name a samplesheet: `input`, and every parameter
/// whose entry in `nextflow_schema.json` names a `schema` (nf-schema validates those files
/// against it), at the top level or in a `$defs`/`definitions` group.
pub fn samplesheet_params(pipeline_dir: &Path) -> Vec<String> {
    let mut names = vec!["input".to_owned()];
    // Beneath the pipeline: a cloned pipeline may ship the schema as a symlink to a secret.
    let Ok(Some(text)) = crate::files::read_beneath(
        pipeline_dir,
        Path::new("nextflow_schema.json"),
        crate::samplesheet::MAX_SCHEMA_BYTES,
    ) else {
        return names;
    };
    let Ok(schema) = serde_json::from_slice::<Value>(&text) else {
        return names;
    };
    let groups = ["$defs", "definitions", "defs"]
        .iter()
        .filter_map(|key| schema.get(*key)?.as_object())
        .flat_map(|groups| groups.values())
        .chain(std::iter::once(&schema));
    for group in groups {
        let Some(properties) = group.get("properties").and_then(Value::as_object) else {
            continue;
        };
        for (name, entry) in properties {
            let names_schema = entry.get("schema").and_then(Value::as_str).is_some();
            if names_schema && !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// The values a params file gives the parameters `wanted`: read whole for JSON; for YAML,
/// only top-level `name: value` lines, and a wanted parameter written any other way (a block,
/// an anchor, nested) is an error rather than a guess, so no samplesheet passes ungated.
pub fn params_file_values(
    path: &Path,
    wanted: &[String],
) -> Result<Vec<(String, String)>, LaunchError> {
    let fail = |reason: String| LaunchError::ParamsFile {
        path: path.to_path_buf(),
        reason,
    };
    // The caller named this file; a symlink in its place is not followed to what it names.
    let mut file = crate::files::open_nofollow(path).map_err(|err| fail(err.to_string()))?;
    let len = file.metadata().map_err(|err| fail(err.to_string()))?.len();
    if len > MAX_PARAMS_FILE_BYTES {
        return Err(fail(format!(
            "{len} bytes, larger than a params file can be"
        )));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).map_err(|err| fail(err.to_string()))?;
    let yaml = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yml") || e.eq_ignore_ascii_case("yaml"));
    if !yaml {
        let value: Value = serde_json::from_str(&text).map_err(|err| fail(err.to_string()))?;
        let Some(object) = value.as_object() else {
            return Err(fail("not a JSON object".to_owned()));
        };
        return Ok(wanted
            .iter()
            .filter_map(|name| match object.get(name)? {
                Value::String(text) => Some((name.clone(), text.clone())),
                other => Some((name.clone(), other.to_string())),
            })
            .collect());
    }
    let mut found = Vec::new();
    for line in text.lines() {
        for name in wanted {
            let Some(rest) = line.strip_prefix(name.as_str()) else {
                continue;
            };
            let Some(value) = rest.trim_start().strip_prefix(':') else {
                continue;
            };
            let value = value.split(" #").next().unwrap_or("").trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            if unquoted.is_empty() || unquoted.starts_with(['|', '>', '&', '*', '{', '[', '!']) {
                return Err(fail(format!(
                    "`{name}` is not written as a plain `{name}: path` line; give it in params"
                )));
            }
            found.push((name.clone(), unquoted.to_owned()));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_line_names_the_run_and_keeps_every_value_one_word() {
        let mut plan = LaunchPlan::new(
            Path::new("/w/pipe"),
            Path::new("/w/pipe"),
            "codaris-0000beef",
        );
        plan.profiles = vec!["test".into(), "docker".into()];
        plan.resume = true;
        plan.outdir = Some(PathBuf::from("/w/results"));
        plan.params = vec![
            ("min_len".into(), "-5".into()),
            ("input".into(), "a b.csv".into()),
        ];
        assert_eq!(
            plan.args(),
            [
                "run",
                "/w/pipe",
                "-name",
                "codaris-0000beef",
                "-with-trace",
                "/w/pipe/trace-codaris-0000beef.txt",
                "-ansi-log",
                "false",
                "-profile",
                "test,docker",
                "-resume",
                "--outdir=/w/results",
                "--min_len=-5",
                "--input=a b.csv",
            ]
        );
        assert!(plan.display().ends_with("--min_len=-5 '--input=a b.csv'"));
        assert_eq!(plan.env(), [("NXF_ANSI_LOG", "false")]);
    }

    #[test]
    fn run_names_are_ones_nextflow_accepts() {
        for entropy in [0, 1, u64::MAX, 0xdead_beef_0000_0001] {
            let name = run_name(entropy);
            assert!(name.len() <= 80);
            assert!(name.starts_with("codaris-"));
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            );
        }
    }

    #[test]
    fn params_become_pairs_and_bad_ones_are_refused() {
        let params = json!({"input": "sheet.csv", "skip_qc": true, "max_cpus": 4, "ratio": 0.5});
        let pairs = param_pairs(params.as_object().unwrap_or(&Map::new()));
        assert_eq!(
            pairs,
            Ok(vec![
                // In the order given (serde_json's `preserve_order`): the command line
                // reads as the call was written.
                ("input".into(), "sheet.csv".into()),
                ("skip_qc".into(), "true".into()),
                ("max_cpus".into(), "4".into()),
                ("ratio".into(), "0.5".into()),
            ])
        );
        for (bad, want) in [
            (json!({"a b": 1}), "is not one Nextflow accepts"),
            (json!({"-profile": "x"}), "is not one Nextflow accepts"),
            (json!({"genomes": {"a": 1}}), "is an object"),
            (json!({"list": [1]}), "is a list"),
            (json!({"outdir": "x"}), "set by its own argument"),
        ] {
            let err = param_pairs(bad.as_object().unwrap_or(&Map::new())).err();
            let text = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(text.contains(want), "{bad}: {text}");
        }
    }

    #[test]
    fn samplesheet_params_are_input_and_those_whose_schema_names_one() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        assert_eq!(samplesheet_params(dir.path()), ["input"]);
        std::fs::write(
            dir.path().join("nextflow_schema.json"),
            json!({"$defs": {
                "input_output_options": {"properties": {
                    "input": {"type": "string", "schema": "assets/schema_input.json"},
                    "outdir": {"type": "string"}
                }},
                "reference_options": {"properties": {
                    "contrasts": {"type": "string", "format": "file-path", "schema": "assets/schema_contrasts.json"}
                }}
            }})
            .to_string(),
        )?;
        assert_eq!(samplesheet_params(dir.path()), ["input", "contrasts"]);
        Ok(())
    }

    #[test]
    fn params_files_give_their_sheet_values_or_refuse_to_guess() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let wanted = vec!["input".to_owned()];
        let json_file = dir.path().join("p.json");
        std::fs::write(&json_file, r#"{"input": "s.csv", "outdir": "r"}"#)?;
        assert_eq!(
            params_file_values(&json_file, &wanted),
            Ok(vec![("input".into(), "s.csv".into())])
        );
        let yaml = dir.path().join("p.yaml");
        std::fs::write(
            &yaml,
            "# run\ninput: 'sheets/s.csv'  # the sheet\noutdir: r\n",
        )?;
        assert_eq!(
            params_file_values(&yaml, &wanted),
            Ok(vec![("input".into(), "sheets/s.csv".into())])
        );
        std::fs::write(&yaml, "input: >\n  s.csv\n")?;
        assert!(params_file_values(&yaml, &wanted).is_err());
        std::fs::write(&json_file, "[1]")?;
        assert!(params_file_values(&json_file, &wanted).is_err());
        Ok(())
    }
}
