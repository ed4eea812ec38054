//! `nf-core pipelines create`, non-interactive and offline (`clone_nfcore_base`).
//!
//! The RO-Crate feature fetches nf-co.re/pipelines.json while the pipeline is made and crashes
//! create offline, so it is always skipped, and said so. The caller's skip list is added.
//! nf-core's last step formats the files with prettier through a pre-commit hook it clones
//! from github.com; offline that only warns, and the answer says the files were not formatted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{NfCoreEnv, NfCoreError, console};
use crate::runner::{Invocation, Runner};

/// The template features nf-core 4.2.1 can skip (its `template_features.yml`).
pub const TEMPLATE_FEATURES: [&str; 23] = [
    "github",
    "github_badges",
    "changelog",
    "license",
    "ci",
    "test_config",
    "nf-test",
    "igenomes",
    "modules",
    "multiqc",
    "fastqc",
    "nf_schema",
    "nf_core_configs",
    "is_nfcore",
    "seqera_platform",
    "gpu",
    "codespaces",
    "vscode",
    "code_linters",
    "citations",
    "documentation",
    "rocrate",
    "email",
];

/// Features skipped on every create because making them needs the network.
pub const SKIPPED_OFFLINE: [(&str, &str); 1] = [(
    "rocrate",
    "making the RO-Crate metadata fetches nf-co.re/pipelines.json",
)];

/// What to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    /// The pipeline's name (nf-core wants lowercase letters and digits).
    pub name: String,
    pub description: String,
    pub author: String,
    /// Where the pipeline goes: absent or an empty directory, inside the roots (the caller
    /// checks the roots; this checks absent-or-empty).
    pub outdir: PathBuf,
    /// Template features to leave out, besides those that need the network.
    pub skip_features: Vec<String>,
}

/// A template feature that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub feature: String,
    pub reason: String,
}

/// What create made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateReport {
    pub path: PathBuf,
    pub name: String,
    /// The git branches of the new repository, sorted.
    pub branches: Vec<String>,
    pub skipped_offline: Vec<Skipped>,
    /// The caller's own skips.
    pub skipped_on_request: Vec<String>,
    /// Steps nf-core could not finish offline (formatting).
    pub notes: Vec<String>,
    pub elapsed: Duration,
}

fn check_field(value: &str, field: &'static str) -> Result<(), NfCoreError> {
    if value.trim().is_empty() || value.contains(['\n', '\r', '\0']) {
        return Err(NfCoreError::BadField { field });
    }
    Ok(())
}

/// The `--template-yaml` text: the skip list only (every entry checked to be a known
/// feature, so nothing else can reach the YAML).
pub fn template_yaml(skip: &[String]) -> Result<String, NfCoreError> {
    let mut features: Vec<&str> = SKIPPED_OFFLINE.iter().map(|(f, _)| *f).collect();
    for feature in skip {
        let Some(known) = TEMPLATE_FEATURES.iter().find(|f| **f == feature.as_str()) else {
            return Err(NfCoreError::UnknownFeature {
                feature: feature.clone(),
            });
        };
        if !features.contains(known) {
            features.push(known);
        }
    }
    let mut out = String::from("skip_features:\n");
    for feature in features {
        out.push_str(&format!("  - {feature}\n"));
    }
    Ok(out)
}

/// Creates the pipeline with nf-core, then reads its branches with git.
pub fn create(
    runner: &dyn Runner,
    env: &NfCoreEnv,
    request: &CreateRequest,
) -> Result<CreateReport, NfCoreError> {
    check_field(&request.name, "name")?;
    check_field(&request.description, "description")?;
    check_field(&request.author, "author")?;
    let yaml = template_yaml(&request.skip_features)?;
    let outdir = &absolute(&request.outdir)?;
    super::shell_safe(outdir)?;
    match std::fs::symlink_metadata(outdir) {
        Ok(meta) if meta.is_dir() => {
            let mut entries =
                std::fs::read_dir(outdir).map_err(|source| io("reading", outdir, source))?;
            if entries.next().is_some() {
                return Err(NfCoreError::OutdirNotEmpty {
                    path: outdir.clone(),
                });
            }
        }
        Ok(_) => {
            return Err(NfCoreError::OutdirNotEmpty {
                path: outdir.clone(),
            });
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(io("reading", outdir, source)),
    }
    let parent = outdir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(NfCoreError::NotADirectory {
            path: parent.to_path_buf(),
        });
    }

    let scratch = tempfile::tempdir_in(runner.scratch())
        .map_err(|source| io("making", &runner.scratch(), source))?;
    let template = scratch.path().join("template.yml");
    std::fs::write(&template, yaml).map_err(|source| io("writing", &template, source))?;
    // `--flag=value`: a value that starts with `-` must not be read as an option.
    let args = vec![
        "pipelines".to_owned(),
        "create".to_owned(),
        format!("--name={}", request.name),
        format!("--description={}", request.description),
        format!("--author={}", request.author),
        format!("--outdir={}", outdir.display()),
        format!("--template-yaml={}", template.display()),
    ];
    let outcome = env.run(runner, args, parent)?;
    if !outcome.exit.success() || !outdir.join("nextflow.config").is_file() {
        return Err(NfCoreError::Fatal {
            command: "pipelines create",
            exit: outcome.exit.to_string(),
            message: console::failure_line(&outcome.stdout.text, &outcome.stderr.text),
        });
    }

    let branches = branches(runner, env, outdir)?;
    let mut notes = Vec::new();
    let said = format!("{}\n{}", outcome.stdout.text, outcome.stderr.text);
    if said.contains("error running the prettier pre-commit hook") {
        notes.push(
            "the files were not formatted with prettier: nf-core runs it through a pre-commit hook fetched from github.com"
                .to_owned(),
        );
    }
    Ok(CreateReport {
        path: outdir.clone(),
        name: format!("nf-core/{}", request.name),
        branches,
        skipped_offline: SKIPPED_OFFLINE
            .iter()
            .map(|(feature, reason)| Skipped {
                feature: (*feature).to_owned(),
                reason: (*reason).to_owned(),
            })
            .collect(),
        skipped_on_request: request
            .skip_features
            .iter()
            .filter(|f| !SKIPPED_OFFLINE.iter().any(|(s, _)| s == f))
            .cloned()
            .collect(),
        notes,
        elapsed: outcome.elapsed,
    })
}

fn absolute(path: &Path) -> Result<PathBuf, NfCoreError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir()
        .map_err(|source| io("reading the current directory for", path, source))?;
    Ok(cwd.join(path))
}

fn branches(runner: &dyn Runner, env: &NfCoreEnv, repo: &Path) -> Result<Vec<String>, NfCoreError> {
    let mut inv = Invocation::new(
        "git",
        vec![
            "for-each-ref".to_owned(),
            "--format=%(refname:short)".to_owned(),
            "refs/heads/".to_owned(),
        ],
        repo,
    );
    // The same PATH (and HOME) nf-core ran with.
    for (key, value) in &env.env {
        inv = inv.with_env(key, value);
    }
    let outcome = runner.run(&inv)?;
    if !outcome.exit.success() {
        return Err(NfCoreError::Fatal {
            command: "pipelines create (reading its git branches)",
            exit: outcome.exit.to_string(),
            message: console::failure_line(&outcome.stdout.text, &outcome.stderr.text),
        });
    }
    let mut names: Vec<String> = outcome
        .stdout
        .text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    names.sort();
    Ok(names)
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> NfCoreError {
    NfCoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

impl CreateReport {
    /// The answer text; its first line says what was made and where.
    pub fn render(&self) -> String {
        let path = self.path.display();
        let mut out = format!("created nf-core pipeline `{}` at `{path}`\n", self.name);
        out.push_str(&format!("git branches: {}\n", self.branches.join(", ")));
        for s in &self.skipped_offline {
            out.push_str(&format!("skipped offline: {}: {}\n", s.feature, s.reason));
        }
        if !self.skipped_on_request.is_empty() {
            out.push_str(&format!(
                "skipped on request: {}\n",
                self.skipped_on_request.join(", ")
            ));
        }
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        out.push_str("next steps:\n");
        out.push_str(&format!(
            "- fill in the `TODO nf-core` places (grep for them in `{path}`), starting with the workflow in `workflows/`\n"
        ));
        out.push_str(
            "- lint it with `lint_pipeline` and check the parameters with `validate_pipeline`\n",
        );
        out.push_str(
            "- add a remote and push every branch (`git remote add origin URL`, `git push --all origin`); `TEMPLATE` is what nf-core's template sync merges from\n",
        );
        if self.skipped_offline.iter().any(|s| s.feature == "rocrate") {
            out.push_str(
                "- when online, add the RO-Crate metadata (`nf-core pipelines rocrate`) if you want it\n",
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_always_skips_rocrate_and_refuses_unknown_features() {
        assert_eq!(
            template_yaml(&["igenomes".to_owned(), "rocrate".to_owned()]).ok(),
            Some("skip_features:\n  - rocrate\n  - igenomes\n".to_owned())
        );
        assert!(matches!(
            template_yaml(&["x\n- evil".to_owned()]),
            Err(NfCoreError::UnknownFeature { .. })
        ));
    }
}
