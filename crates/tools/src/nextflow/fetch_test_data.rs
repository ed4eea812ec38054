//! `fetch_test_data`: the files a pipeline's `conf/test.config` names on nf-core's
//! test-datasets (and the files the samplesheets among them name), downloaded into
//! `<pipeline>/tests/data/<branch>/<path>` with their sizes and SHA-256, and the test
//! configuration pointed at the local copies (`codaris_nextflow::test_datasets` plans all that).
//!
//! All or nothing: every file is downloaded into a staging directory inside `tests/` first;
//! only when all arrived whole are they moved into place, and the configuration is written
//! last. Any failure removes the staging directory and puts back what a move replaced, so
//! the pipeline is as it was.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codaris_nextflow::test_datasets::{
    self, ConfigPlan, ConfigRequest, LOCAL_DIR, NotFetched, TEST_CONFIG, Wanted,
};
use reqwest::Url;
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

use super::args::{optional_string, pipeline_dir};
use crate::context::{Fence, ToolContext};
use crate::files::fence::open::{self, OpenError};
use crate::files::fence::{Beneath, system};
use crate::tool::{Tool, ToolError, ToolOutput};

/// The largest file fetched: nf-core's test data is kept small (a few MB a file).
const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;
/// The most one call downloads in all.
const MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;
/// The most files one call fetches (the configuration's and its samplesheets').
const MAX_FILES: usize = 1000;
/// Connecting to the server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// One file, from the request to its last byte.
const FILE_TIMEOUT: Duration = Duration::from_secs(300);
/// Redirects followed, each within the origin of the first request.
const MAX_REDIRECTS: usize = 5;

#[derive(Debug)]
pub(super) struct FetchTestData {
    /// The configured test-datasets base, ending in `/`.
    pub base: String,
}

#[async_trait::async_trait]
impl Tool for FetchTestData {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::FETCH_TEST_DATA
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        let pipeline = pipeline_dir(ctx, tool, args)?;
        let dataset = optional_string(tool, args, "dataset")?.map(str::to_owned);
        let places = Places::checked(ctx, tool, &pipeline)?;
        let test_config = read_text(&ctx.fence, tool, &places.config)?;
        let nextflow_config = match open::read_text(
            &ctx.fence,
            &pipeline.join("nextflow.config"),
            MAX_CONFIG_BYTES,
        ) {
            Ok(text) => Some(text),
            Err(OpenError::NotFound { .. }) => None,
            Err(err) => return Err(model(tool, err)),
        };
        let plan = test_datasets::plan_config(&ConfigRequest {
            test_config: &test_config,
            nextflow_config: nextflow_config.as_deref(),
            base: &self.base,
            local_root: &places.data,
            dataset: dataset.as_deref(),
        })
        .map_err(|err| model(tool, err.to_string()))?;
        let fetched = if plan.files.is_empty() {
            Fetched::default()
        } else {
            let had_tests = places.tests.exists();
            let fetched = self.fetch_and_commit(&places, &plan).await;
            if fetched.is_err() && !had_tests {
                // Made for the staging directory: gone with it.
                let _ = std::fs::remove_dir(&places.tests);
            }
            fetched.map_err(|err| model(tool, format!("{err}; nothing was changed")))?
        };
        Ok(ToolOutput::text(render(
            &self.base, &places, &plan, &fetched,
        )))
    }
}

impl FetchTestData {
    /// Downloads into a staging directory, then moves into place off the async threads.
    async fn fetch_and_commit(
        &self,
        places: &Places,
        plan: &ConfigPlan,
    ) -> Result<Fetched, String> {
        let client = client()?;
        let staging = places.staging()?;
        let fetched = fetch_all(&client, &self.base, places, plan, staging.path()).await?;
        let (places, config) = (places.clone(), plan.rewritten.clone());
        tokio::task::spawn_blocking(move || {
            let done = commit(&places, &fetched, config.as_deref(), staging.path());
            drop(staging);
            done.map(|()| fetched)
        })
        .await
        .map_err(|err| format!("the move into place stopped: {err}"))?
    }
}

fn model(tool: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::model(format!("{tool}: {why}"))
}

/// A pipeline's configuration file is a few KiB; past this it is not one.
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

fn read_text(fence: &Fence, tool: &str, path: &Path) -> Result<String, ToolError> {
    open::read_text(fence, path, MAX_CONFIG_BYTES).map_err(|err| match err {
        OpenError::NotFound { .. } => model(
            tool,
            format!(
                "cannot read `{}` (it does not exist); the pipeline's test profile lives there",
                path.display()
            ),
        ),
        refused => model(tool, refused),
    })
}

/// Where the tool reads and writes, each checked against the fence.
#[derive(Debug, Clone)]
struct Places {
    pipeline: PathBuf,
    config: PathBuf,
    tests: PathBuf,
    data: PathBuf,
}

impl Places {
    /// The test configuration, `tests/` and `tests/data/`: beneath a root, not protected, and
    /// reached through no symlink (a write through one could land anywhere the link says).
    fn checked(ctx: &ToolContext, tool: &'static str, pipeline: &Path) -> Result<Self, ToolError> {
        let places = Self {
            pipeline: pipeline.to_path_buf(),
            config: pipeline.join(TEST_CONFIG),
            tests: pipeline.join("tests"),
            data: pipeline.join(LOCAL_DIR),
        };
        for path in [&places.config, &places.tests, &places.data] {
            let at = Beneath::locate_change(ctx, tool, &path.to_string_lossy())?;
            if at.real().as_deref() != Some(path.as_path()) {
                return Err(model(
                    tool,
                    format!(
                        "`{}` is reached through a symlink; fetch_test_data writes only into the pipeline's own `{LOCAL_DIR}` and `{TEST_CONFIG}`",
                        path.display()
                    ),
                ));
            }
        }
        Ok(places)
    }

    /// The staging directory inside `tests/`, removed when dropped.
    fn staging(&self) -> Result<tempfile::TempDir, String> {
        std::fs::create_dir_all(&self.tests)
            .map_err(|err| format!("cannot make `{}`: {err}", self.tests.display()))?;
        tempfile::Builder::new()
            .prefix(".fetch_test_data-")
            .tempdir_in(&self.tests)
            .map_err(|err| {
                format!(
                    "cannot make a staging directory in `{}`: {err}",
                    self.tests.display()
                )
            })
    }
}

/// One file downloaded into the staging directory.
#[derive(Debug, Clone)]
struct Staged {
    rel: String,
    url: String,
    size: u64,
    sha256: String,
    /// How many samplesheet cells now point at local copies.
    cells: usize,
}

#[derive(Debug, Default)]
struct Fetched {
    files: Vec<Staged>,
    not_fetched: Vec<NotFetched>,
}

impl Fetched {
    fn total(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

fn client() -> Result<reqwest::Client, String> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(Url::origin);
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if first.as_ref() == Some(&attempt.url().origin()) {
            attempt.follow()
        } else {
            // Answered as the redirect it is, which the download then refuses.
            attempt.stop()
        }
    });
    crate::tls::client_builder()
        .user_agent(crate::web::USER_AGENT)
        .redirect(policy)
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|err| format!("cannot make an HTTP client: {err}"))
}

/// Downloads the configuration's files, then the files its samplesheets name, into `staging`.
async fn fetch_all(
    client: &reqwest::Client,
    base: &str,
    places: &Places,
    plan: &ConfigPlan,
    staging: &Path,
) -> Result<Fetched, String> {
    let mut fetched = Fetched::default();
    let mut queue: Vec<Wanted> = plan.files.clone();
    let mut seen: Vec<String> = queue.iter().map(|w| w.rel.clone()).collect();
    let mut total = 0u64;
    let mut next = 0;
    while let Some(wanted) = queue.get(next).cloned() {
        next += 1;
        if next > MAX_FILES {
            return Err(format!("the test data is more than {MAX_FILES} files"));
        }
        let path = test_datasets::local_path(staging, &wanted.rel);
        let (size, sha256) = download(client, &wanted.url, &path, MAX_TOTAL_BYTES - total).await?;
        total += size;
        let mut staged = Staged {
            rel: wanted.rel.clone(),
            url: wanted.url.clone(),
            size,
            sha256,
            cells: 0,
        };
        if let Some(delimiter) = test_datasets::sheet_delimiter(&wanted.rel)
            && let Ok(Some(text)) = staged_text(&path).await
        {
            let sheet =
                test_datasets::plan_sheet(&text, delimiter, &wanted.rel, base, &places.data);
            for file in sheet.files {
                if !seen.contains(&file.rel) {
                    seen.push(file.rel.clone());
                    queue.push(file);
                }
            }
            fetched.not_fetched.extend(sheet.not_fetched);
            if let Some(local) = sheet.rewritten {
                tokio::fs::write(&path, &local)
                    .await
                    .map_err(|err| format!("cannot write `{}`: {err}", path.display()))?;
                staged.size = local.len() as u64;
                staged.sha256 =
                    hex(ring::digest::digest(&ring::digest::SHA256, local.as_bytes()).as_ref());
                staged.cells = sheet.cells;
            }
        }
        fetched.files.push(staged);
    }
    Ok(fetched)
}

/// A file just downloaded into the staging directory, read back (a samplesheet), no symlink
/// followed.
async fn staged_text(path: &Path) -> std::io::Result<Option<String>> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || system::read_own(&path))
        .await
        .map_err(std::io::Error::other)?
}

/// A new file in the staging directory (which the tool made), no symlink followed.
async fn create_staged(path: &Path) -> std::io::Result<tokio::fs::File> {
    let path = path.to_path_buf();
    let file = tokio::task::spawn_blocking(move || {
        system::open_own(
            &path,
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true),
        )
    })
    .await
    .map_err(std::io::Error::other)??;
    Ok(tokio::fs::File::from_std(file))
}

/// `url` into `path`, whole or not at all: its size and SHA-256.
async fn download(
    client: &reqwest::Client,
    url: &str,
    path: &Path,
    room: u64,
) -> Result<(u64, String), String> {
    let limit = MAX_FILE_BYTES.min(room);
    let work = async {
        let mut response = client
            .get(url)
            .send()
            .await
            .map_err(|err| format!("cannot download `{url}`: {}", without_url(&err)))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(format!(
                "`{url}` redirects to another server ({status}); only redirects within the test-datasets server are followed"
            ));
        }
        if !status.is_success() {
            return Err(format!("`{url}` answered {status}"));
        }
        // Read before the body: reqwest's figure shrinks as the body is read.
        let announced = response.content_length();
        if announced.is_some_and(|n| n > limit) {
            return Err(too_big(url, limit));
        }
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|err| format!("cannot make `{}`: {err}", dir.display()))?;
        }
        let mut file = create_staged(path)
            .await
            .map_err(|err| format!("cannot write `{}`: {err}", path.display()))?;
        let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
        let mut size = 0u64;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| format!("the download of `{url}` broke off: {}", without_url(&err)))?
        {
            size += chunk.len() as u64;
            if size > limit {
                return Err(too_big(url, limit));
            }
            hash.update(&chunk);
            file.write_all(&chunk)
                .await
                .map_err(|err| format!("cannot write `{}`: {err}", path.display()))?;
        }
        if announced.is_some_and(|n| n != size) {
            return Err(format!(
                "the download of `{url}` broke off after {size} bytes"
            ));
        }
        file.sync_all()
            .await
            .map_err(|err| format!("cannot write `{}`: {err}", path.display()))?;
        Ok((size, hex(hash.finish().as_ref())))
    };
    tokio::time::timeout(FILE_TIMEOUT, work)
        .await
        .map_err(|_| format!("`{url}` took longer than {} s", FILE_TIMEOUT.as_secs()))?
}

fn too_big(url: &str, limit: u64) -> String {
    format!(
        "`{url}` is larger than {} (the most one file, or all of them together, may be)",
        size_text(limit)
    )
}

/// A reqwest error's cause without the URL it repeats.
fn without_url(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    if let Some(url) = err.url() {
        text = text.replace(&format!(" ({url})"), "");
    }
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

/// Moves the staged files into `tests/data`, then writes the configuration; undoes every
/// move when a later step fails.
fn commit(
    places: &Places,
    fetched: &Fetched,
    config: Option<&str>,
    staging: &Path,
) -> Result<(), String> {
    let backups = staging.join(".replaced");
    let mut done: Vec<Move> = Vec::new();
    let result = (|| {
        for (index, file) in fetched.files.iter().enumerate() {
            let target = test_datasets::local_path(&places.data, &file.rel);
            refuse_links(&places.pipeline, &target)?;
            let made = create_parents(&places.pipeline, &target)?;
            let backup = if target.exists() {
                std::fs::create_dir_all(&backups).map_err(|e| e.to_string())?;
                let backup = backups.join(index.to_string());
                std::fs::rename(&target, &backup)
                    .map_err(|err| format!("cannot move `{}` aside: {err}", target.display()))?;
                Some(backup)
            } else {
                None
            };
            let from = test_datasets::local_path(staging, &file.rel);
            let moved = std::fs::rename(&from, &target);
            done.push(Move {
                target: target.clone(),
                backup,
                made,
                moved: moved.is_ok(),
            });
            moved.map_err(|err| format!("cannot move into `{}`: {err}", target.display()))?;
        }
        if let Some(text) = config {
            let next = places.config.with_file_name(".test.config.fetch_test_data");
            std::fs::write(&next, text)
                .and_then(|()| std::fs::rename(&next, &places.config))
                .map_err(|err| {
                    let _ = std::fs::remove_file(&next);
                    format!("cannot write `{}`: {err}", places.config.display())
                })?;
        }
        Ok(())
    })();
    if result.is_err() {
        for step in done.iter().rev() {
            step.undo();
        }
    }
    result
}

/// One move into place, to undo.
struct Move {
    target: PathBuf,
    backup: Option<PathBuf>,
    /// Directories made for it, deepest last.
    made: Vec<PathBuf>,
    moved: bool,
}

impl Move {
    fn undo(&self) {
        if self.moved {
            let _ = std::fs::remove_file(&self.target);
        }
        if let Some(backup) = &self.backup {
            let _ = std::fs::rename(backup, &self.target);
        }
        for dir in self.made.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Refuses a target whose existing components below the pipeline include a symlink, or
/// which is itself anything but a regular file.
fn refuse_links(pipeline: &Path, target: &Path) -> Result<(), String> {
    let rel = target
        .strip_prefix(pipeline)
        .map_err(|_| format!("`{}` is not inside the pipeline", target.display()))?;
    let mut at = pipeline.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "`{}` is a symlink; fetch_test_data does not write through symlinks",
                    at.display()
                ));
            }
            Ok(meta) if at == target && !meta.is_file() => {
                return Err(format!("`{}` exists and is not a file", at.display()));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// Makes the missing directories above `target`, returning those it made, outermost first.
fn create_parents(pipeline: &Path, target: &Path) -> Result<Vec<PathBuf>, String> {
    let mut missing: Vec<PathBuf> = target
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(pipeline) && !dir.exists())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    for dir in &missing {
        std::fs::create_dir(dir)
            .map_err(|err| format!("cannot make `{}`: {err}", dir.display()))?;
    }
    Ok(missing)
}

fn render(base: &str, places: &Places, plan: &ConfigPlan, fetched: &Fetched) -> String {
    let mut out = format!(
        "fetched {} files ({}) from {base} into {}\n",
        fetched.files.len(),
        size_text(fetched.total()),
        places.data.display()
    );
    for file in &fetched.files {
        let _ = writeln!(
            out,
            "{}  {}  sha256:{}  {}",
            test_datasets::local_path(&places.data, &file.rel).display(),
            size_text(file.size),
            file.sha256,
            file.url
        );
    }
    if !plan.changed.is_empty() && !fetched.files.is_empty() {
        let _ = writeln!(out, "{TEST_CONFIG} rewritten:");
        for line in &plan.changed {
            let mark = if line.inserted { "added" } else { "changed" };
            let _ = writeln!(out, "  {}: {} ({mark})", line.line, line.text.trim());
        }
    }
    for sheet in fetched.files.iter().filter(|f| f.cells > 0) {
        let _ = writeln!(
            out,
            "samplesheet {} rewritten: {} cells now name local copies",
            sheet.rel, sheet.cells
        );
    }
    if !plan.already_local.is_empty() {
        out.push_str("already local:\n");
        for local in &plan.already_local {
            let state = if local.path.is_file() {
                "present"
            } else {
                "missing"
            };
            let _ = writeln!(
                out,
                "  {}: {} ({state})",
                local.named_by,
                local.path.display()
            );
        }
    }
    let not_fetched: Vec<&NotFetched> = plan
        .not_fetched
        .iter()
        .chain(&fetched.not_fetched)
        .collect();
    if !not_fetched.is_empty() {
        out.push_str("not fetched:\n");
        for item in not_fetched {
            let _ = writeln!(out, "  {}: `{}` {}", item.named_by, item.value, item.reason);
        }
    }
    if fetched.files.is_empty()
        && plan.already_local.iter().all(|l| l.path.is_file())
        && !plan.already_local.is_empty()
    {
        let _ = writeln!(
            out,
            "nothing to fetch: {TEST_CONFIG} already names the local copies"
        );
    }
    out
}

fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(0), "0 B");
        assert_eq!(size_text(1023), "1023 B");
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(hex(&[0, 15, 255]), "000fff");
    }
}
