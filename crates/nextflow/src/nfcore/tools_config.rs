//! The one change a lint run makes to the pipeline, and its undoing.
//!
//! nf-core's module and subworkflow lint clones github.com/nf-core/modules and crashes the
//! whole run offline; the only switch is `lint: {nfcore_components: false}` in the pipeline's
//! `.nf-core.yml` (nf-core reads no other place). So for the run the file gets that one key,
//! and afterwards its original bytes back: in [`ToolsConfigEdit::restore`], or on drop when a
//! run ends early. A file changed by someone else in between is left alone and reported.

use std::path::{Path, PathBuf};

use super::NfCoreError;

const KEY_LINE: &str = "nfcore_components: false";

/// The names nf-core looks for, in its order.
pub(crate) const CONFIG_NAMES: [&str; 2] = [".nf-core.yml", ".nf-core.yaml"];

/// A `.nf-core.yml` edited for one run.
#[derive(Debug)]
pub(crate) struct ToolsConfigEdit {
    pipeline: PathBuf,
    path: PathBuf,
    original: Vec<u8>,
    written: Option<Vec<u8>>,
}

impl ToolsConfigEdit {
    /// Switches component lint off in the pipeline's tools config for the run.
    pub(crate) fn apply(pipeline: &Path) -> Result<Self, NfCoreError> {
        let Some(path) = CONFIG_NAMES
            .iter()
            .map(|name| pipeline.join(name))
            .find(|p| p.symlink_metadata().is_ok())
        else {
            return Err(NfCoreError::NotAPipeline {
                path: pipeline.to_path_buf(),
                file: ".nf-core.yml",
            });
        };
        let meta = path
            .symlink_metadata()
            .map_err(|source| io("reading", &path, source))?;
        if meta.file_type().is_symlink() {
            return Err(NfCoreError::ToolsConfigSymlink { path });
        }
        // Read and written beneath the pipeline: the file may be swapped for a symlink after
        // the look above, and would then be followed to a secret or out of the roots.
        let original = read(pipeline, &path)?;
        let text = String::from_utf8(original.clone())
            .map_err(|_| NfCoreError::ToolsConfigForm { path: path.clone() })?;
        let written = match with_components_off(&text) {
            Edit::Unchanged => None,
            Edit::Changed(new) => Some(new.into_bytes()),
            Edit::Unsupported => return Err(NfCoreError::ToolsConfigForm { path }),
        };
        if let Some(bytes) = &written {
            crate::files::write_beneath(pipeline, Path::new(file_name(&path)), bytes)
                .map_err(|source| io("writing", &path, source))?;
        }
        Ok(Self {
            pipeline: pipeline.to_path_buf(),
            path,
            original,
            written,
        })
    }

    /// Puts the original bytes back, unless the file no longer holds what was written.
    pub(crate) fn restore(mut self) -> Result<(), NfCoreError> {
        self.undo()
    }

    fn undo(&mut self) -> Result<(), NfCoreError> {
        let Some(written) = self.written.take() else {
            return Ok(());
        };
        let now = read(&self.pipeline, &self.path)?;
        if now != written {
            return Err(NfCoreError::ToolsConfigChanged {
                path: self.path.clone(),
            });
        }
        crate::files::write_beneath(
            &self.pipeline,
            Path::new(file_name(&self.path)),
            &self.original,
        )
        .map_err(|source| io("restoring", &self.path, source))
    }
}

impl Drop for ToolsConfigEdit {
    fn drop(&mut self) {
        // Best effort on an early return; `restore` is the path that reports.
        let _ = self.undo();
    }
}

/// The file's name within the pipeline (one of [`CONFIG_NAMES`]).
fn file_name(path: &Path) -> &std::ffi::OsStr {
    path.file_name().unwrap_or_default()
}

/// The whole tools config, read beneath the pipeline (no limit: nf-core reads it whole too).
fn read(pipeline: &Path, path: &Path) -> Result<Vec<u8>, NfCoreError> {
    crate::files::read_beneath(pipeline, Path::new(file_name(path)), u64::MAX)
        .map(Option::unwrap_or_default)
        .map_err(|source| io("reading", path, source))
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> NfCoreError {
    NfCoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Edit {
    /// Component lint is already off.
    Unchanged,
    Changed(String),
    /// `lint:` is written in a form this edit does not handle (a non-empty flow map).
    Unsupported,
}

fn is_null(value: &str) -> bool {
    let value = value.split(" #").next().unwrap_or("").trim();
    matches!(value, "" | "null" | "~" | "Null" | "NULL")
}

/// The YAML text with `lint.nfcore_components` set to a non-null value, edited as text so
/// the rest of the file is byte for byte the same.
pub(crate) fn with_components_off(text: &str) -> Edit {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let top = lines.iter().position(|line| {
        line.strip_prefix("lint:").is_some() || line.strip_prefix("\"lint\":").is_some()
    });
    let Some(top) = top else {
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        return Edit::Changed(format!("{text}{sep}lint:\n  {KEY_LINE}\n"));
    };
    let head = lines[top];
    let inline = head.split_once(':').map(|(_, rest)| rest).unwrap_or("");
    let inline_value = inline.split(" #").next().unwrap_or("").trim();
    let mut out = String::with_capacity(text.len() + 32);
    out.extend(lines[..top].iter().copied());
    if !inline_value.is_empty() {
        if !(is_null(inline_value) || inline_value == "{}") {
            return Edit::Unsupported;
        }
        out.push_str("lint:\n  ");
        out.push_str(KEY_LINE);
        out.push('\n');
        out.extend(lines[top + 1..].iter().copied());
        return Edit::Changed(out);
    }
    // The block under `lint:`: indented, blank or comment lines.
    let block_end = lines[top + 1..]
        .iter()
        .position(|line| {
            let t = line.trim();
            !(t.is_empty() || t.starts_with('#') || line.starts_with([' ', '\t']))
        })
        .map_or(lines.len(), |i| top + 1 + i);
    let block = &lines[top + 1..block_end];
    let indent: String = block
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
        .map(|l| l.chars().take_while(|c| *c == ' ').collect())
        .filter(|s: &String| !s.is_empty())
        .unwrap_or_else(|| "  ".to_owned());
    let existing = block.iter().position(|l| {
        l.strip_prefix(indent.as_str())
            .is_some_and(|rest| rest.starts_with("nfcore_components:"))
    });
    out.push_str(head);
    if !head.ends_with('\n') {
        out.push('\n');
    }
    match existing {
        Some(i) => {
            let value = block[i]
                .trim_start()
                .trim_start_matches("nfcore_components:")
                .trim();
            let continues = block.get(i + 1).is_some_and(|next| {
                next.starts_with(&format!("{indent} ")) || next.trim_start().starts_with('-')
            });
            if !is_null(value) || continues {
                return Edit::Unchanged;
            }
            for (j, line) in block.iter().enumerate() {
                if j == i {
                    out.push_str(&format!("{indent}{KEY_LINE}\n"));
                } else {
                    out.push_str(line);
                }
            }
        }
        None => {
            out.push_str(&format!("{indent}{KEY_LINE}\n"));
            out.extend(block.iter().copied());
        }
    }
    out.extend(lines[block_end..].iter().copied());
    Edit::Changed(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn changed(text: &str) -> String {
        match with_components_off(text) {
            Edit::Changed(s) => s,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn inserts_the_key_under_an_existing_lint_block() {
        let text = "repository_type: pipeline\nlint:\n    files_unchanged:\n        - .prettierignore\ntemplate:\n  name: x\n";
        assert_eq!(
            changed(text),
            "repository_type: pipeline\nlint:\n    nfcore_components: false\n    files_unchanged:\n        - .prettierignore\ntemplate:\n  name: x\n"
        );
    }

    #[test]
    fn appends_a_lint_block_when_there_is_none() {
        assert_eq!(
            changed("repository_type: pipeline"),
            "repository_type: pipeline\nlint:\n  nfcore_components: false\n"
        );
    }

    #[test]
    fn replaces_a_null_value_and_keeps_a_set_one() {
        assert_eq!(
            changed("lint:\n  nfcore_components: null\n  x: false\n"),
            "lint:\n  nfcore_components: false\n  x: false\n"
        );
        assert_eq!(
            with_components_off("lint:\n  nfcore_components: false\n"),
            Edit::Unchanged
        );
        assert_eq!(
            with_components_off("lint:\n  nfcore_components:\n    - fastqc\n"),
            Edit::Unchanged
        );
    }

    #[test]
    fn empty_inline_forms_become_a_block_and_a_flow_map_is_refused() {
        assert_eq!(
            changed("lint: {}\nx: 1\n"),
            "lint:\n  nfcore_components: false\nx: 1\n"
        );
        assert_eq!(
            changed("lint: null\n"),
            "lint:\n  nfcore_components: false\n"
        );
        assert_eq!(
            with_components_off("lint: {files_exist: false}\n"),
            Edit::Unsupported
        );
    }
}
