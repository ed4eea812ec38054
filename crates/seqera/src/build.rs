//! `build_container_image`: a container for a tool. An nf-core module that already ships the
//! tool answers first (its Docker and Singularity images and conda spec, no build); otherwise
//! Seqera Wave builds it from conda packages. A push goes only to a registry the operator
//! listed in `[seqera] registries` (whether the person approves the push is the daemon's card,
//! capability `push_image`, decided before the call reaches this server).

use serde_json::{Value, json};

use crate::args::Args;
use crate::modules::{Catalogue, Module};
use crate::wave::{BuildRequest, Built, Format, Wave};
use crate::{SeqeraSetup, SeqeraTool, ToolFailure};

pub const NAME: &str = "build_container_image";
/// Channels a conda build uses unless told otherwise (nf-core's order).
pub const DEFAULT_CHANNELS: [&str; 2] = ["conda-forge", "bioconda"];
pub const DEFAULT_PLATFORM: &str = "linux/amd64";
const MAX_PACKAGES: usize = 50;
const MAX_CHANNELS: usize = 10;
/// Modules listed in one catalogue answer.
const MAX_MODULES_SHOWN: usize = 12;

/// The tool.
#[derive(Debug, Clone)]
pub struct BuildContainerImage {
    setup: SeqeraSetup,
}

impl BuildContainerImage {
    pub fn new(setup: &SeqeraSetup) -> Self {
        Self {
            setup: setup.clone(),
        }
    }
}

/// A checked call.
#[derive(Debug)]
struct Call<'a> {
    tool: &'a str,
    version: Option<&'a str>,
    packages: Option<Vec<&'a str>>,
    request: BuildRequest,
}

#[async_trait::async_trait]
impl SeqeraTool for BuildContainerImage {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "A container image for a tool. First looks the tool (and version) up in the nf-core \
         module catalogue and, when a module ships it, answers with the module's Docker and \
         Singularity images and conda spec, no build needed. Otherwise (or when `packages` is \
         given, even an empty list) Seqera Wave builds an image from conda packages: `tool=version` \
         plus `packages`, channels conda-forge and bioconda unless `channels` is given. \
         `registry` must be one of the registries the operator listed; the image is then frozen \
         (pushed there) unless `freeze` is false."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "tool": {"type": "string", "description": "Conda package or nf-core module name, e.g. `fastqc`, `bwa`, `samtools/sort`"},
                "version": {"type": "string", "description": "Version, e.g. `0.12.1` (a prefix such as `0.12` matches in the catalogue)"},
                "packages": {"type": "array", "items": {"type": "string"}, "description": "More conda specs to build with, e.g. `samtools=1.21`; giving this skips the catalogue"},
                "channels": {"type": "array", "items": {"type": "string"}, "description": "Conda channels (default conda-forge, bioconda)"},
                "platform": {"type": "string", "enum": ["linux/amd64", "linux/arm64"]},
                "format": {"type": "string", "enum": ["docker", "sif"]},
                "freeze": {"type": "boolean", "description": "Push a permanent image to `registry` (default: true when a registry is given)"},
                "registry": {"type": "string", "description": "One of the operator's [seqera] registries"}
            },
            "required": ["tool"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn call(&self, args: &Value) -> Result<String, ToolFailure> {
        let call = self.check(args)?;
        // Versions nf-core ships when the one asked for is not among them, said beside the build.
        let mut nf_core_has = Vec::new();
        if call.packages.is_none() {
            let catalogue = Catalogue::load(self.setup.modules.as_deref()).map_err(ToolFailure)?;
            let found = catalogue.lookup(call.tool, call.version);
            if !found.is_empty() {
                return Ok(from_catalogue(call.tool, &found, &catalogue));
            }
            nf_core_has = catalogue
                .lookup(call.tool, None)
                .iter()
                .map(|m| format!("{} {} ({})", m.tool, m.version, m.module))
                .collect();
            nf_core_has.dedup();
        }
        if call.tool.contains('/') {
            return Err(ToolFailure::new(format!(
                "{NAME}: no nf-core module `{}`{}; to build on Wave, give the conda package name as `tool` (e.g. `samtools`, not `samtools/sort`)",
                call.tool,
                call.version
                    .map(|v| format!(" at version {v}"))
                    .unwrap_or_default()
            )));
        }
        let wave = Wave::new(&self.setup);
        let built = wave.build(&call.request).await?;
        let mut text = describe_build(&call, &built, wave.has_token());
        if !nf_core_has.is_empty() {
            text.push_str(&format!(
                "\nnf-core modules have other versions, no build needed: {}",
                nf_core_has
                    .iter()
                    .take(MAX_MODULES_SHOWN)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(text)
    }
}

impl BuildContainerImage {
    fn check<'a>(&self, value: &'a Value) -> Result<Call<'a>, ToolFailure> {
        let args = Args::of(NAME, value)?;
        let tool = args.required_str("tool")?;
        if !spelled_with(tool, 200, "._-/") {
            return Err(ToolFailure::new(format!(
                "{NAME}: `tool` must be a conda package or nf-core module name (letters, digits, . _ - /)"
            )));
        }
        let version = args.optional_str("version")?;
        if let Some(version) = version
            && !spelled_with(version, 100, "._+*!<>=,-")
        {
            return Err(ToolFailure::new(format!(
                "{NAME}: `version` must be a conda version such as `1.21` or `>=1.20`"
            )));
        }
        let packages = args.optional_strings("packages", MAX_PACKAGES)?;
        for spec in packages.iter().flatten() {
            if !spelled_with(spec, 200, "._+*!<>=,:/-") {
                return Err(ToolFailure::new(format!(
                    "{NAME}: `packages` holds `{}`, which is not a conda spec such as `samtools=1.21` or `bioconda::samtools=1.21`",
                    crate::args::cut(spec, 80)
                )));
            }
        }
        let channels = args.optional_strings("channels", MAX_CHANNELS)?;
        for channel in channels.iter().flatten() {
            if !spelled_with(channel, 200, "._:/-") {
                return Err(ToolFailure::new(format!(
                    "{NAME}: `channels` holds `{}`, which is not a conda channel name",
                    crate::args::cut(channel, 80)
                )));
            }
        }
        let platform = match args.optional_str("platform")? {
            None => DEFAULT_PLATFORM,
            Some("linux/amd64" | "amd64" | "x86_64") => "linux/amd64",
            Some("linux/arm64" | "arm64" | "aarch64") => "linux/arm64",
            Some(_) => {
                return Err(ToolFailure::new(format!(
                    "{NAME}: `platform` must be linux/amd64 or linux/arm64 (the platforms Wave builds for)"
                )));
            }
        };
        let format = match args.optional_str("format")? {
            None => Format::Docker,
            Some(text) => Format::parse(text).ok_or_else(|| {
                ToolFailure::new(format!("{NAME}: `format` must be docker or sif"))
            })?,
        };
        let registry = args.optional_str("registry")?;
        if let Some(registry) = registry
            && !self
                .setup
                .registries
                .iter()
                .any(|listed| listed == registry)
        {
            let listed = if self.setup.registries.is_empty() {
                "none are listed".to_owned()
            } else {
                self.setup.registries.join(", ")
            };
            return Err(ToolFailure::new(format!(
                "registry {} is not in [seqera] registries ({listed}); the operator lists the registries images may be pushed to",
                crate::args::cut(registry, 200)
            )));
        }
        let freeze = args.optional_bool("freeze")?.unwrap_or(registry.is_some());
        if freeze && registry.is_none() {
            return Err(ToolFailure::new(format!(
                "{NAME}: freeze: true needs a `registry`: Wave pushes a frozen image to a build repository; give one of [seqera] registries, or leave freeze off for an ephemeral image"
            )));
        }
        if freeze && self.setup.token.is_none() {
            return Err(ToolFailure::new(format!(
                "{NAME}: a frozen build needs a Seqera token (Wave pushes frozen images only for a signed-in user): set [seqera] token or TOWER_ACCESS_TOKEN, or pass freeze: false"
            )));
        }
        let main_entry = match version {
            None => tool.to_owned(),
            Some(v) if v.starts_with(['<', '>', '=', '!']) => format!("{tool}{v}"),
            Some(v) => format!("{tool}={v}"),
        };
        // A package that already names the tool (`samtools=1.21` for `samtools`) pins it; the
        // bare tool beside it would only ask conda to solve for it twice.
        let named_in_packages = packages.iter().flatten().any(|p| package_name(p) == tool);
        let mut entries = if named_in_packages && version.is_none() {
            Vec::new()
        } else {
            vec![main_entry]
        };
        entries.extend(packages.iter().flatten().map(|p| (*p).to_owned()));
        let channels = match &channels {
            Some(list) if !list.is_empty() => list.iter().map(|c| (*c).to_owned()).collect(),
            _ => DEFAULT_CHANNELS.iter().map(|c| (*c).to_owned()).collect(),
        };
        Ok(Call {
            tool,
            version,
            packages,
            request: BuildRequest {
                entries,
                channels,
                platform: platform.to_owned(),
                format,
                freeze,
                build_repository: registry.map(str::to_owned),
            },
        })
    }
}

/// Whether `text` is at most `max` bytes of ASCII letters, digits and `extra`: what a conda
/// name, version, spec or channel is made of (and nothing a shell or a URL would read).
fn spelled_with(text: &str, max: usize, extra: &str) -> bool {
    text.len() <= max
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

fn from_catalogue(query: &str, found: &[&Module], catalogue: &Catalogue) -> String {
    let mut out = match found {
        [one] => format!(
            "nf-core module {} provides {} {}: no build needed\n",
            one.module, one.tool, one.version
        ),
        many => format!(
            "{} nf-core modules provide {query}: no build needed\n",
            many.len()
        ),
    };
    for module in found.iter().take(MAX_MODULES_SHOWN) {
        if found.len() > 1 {
            out.push_str(&format!(
                "\nmodule {}: {} {}\n",
                module.module, module.tool, module.version
            ));
        }
        if let Some(docker) = &module.docker {
            out.push_str(&format!("docker: {docker}\n"));
        }
        if let Some(singularity) = &module.singularity {
            out.push_str(&format!("singularity: {singularity}\n"));
        }
        if !module.conda.is_empty() {
            out.push_str(&format!(
                "conda: {} (channels {})\n",
                module.conda.join(" "),
                module.channels.join(", ")
            ));
        }
    }
    if found.len() > MAX_MODULES_SHOWN {
        out.push_str(&format!(
            "\n… and {} more (name the module, e.g. `{}`)\n",
            found.len() - MAX_MODULES_SHOWN,
            found[0].module
        ));
    }
    let commit: String = catalogue.commit.chars().take(12).collect();
    out.push_str(&format!(
        "\nfrom the nf-core/modules catalogue at {commit}; to build on Wave instead, call again with `packages` (an empty list will do)"
    ));
    out
}

fn describe_build(call: &Call<'_>, built: &Built, authenticated: bool) -> String {
    let submitted = &built.submitted;
    let status = &built.status;
    let what = match call.version {
        Some(v) => format!("{} {v}", call.tool),
        None => call.tool.to_owned(),
    };
    let mut out = format!("Wave built {what}: {}\n", submitted.target_image);
    let build_id = status
        .build_id
        .as_deref()
        .or(submitted.build_id.as_deref())
        .unwrap_or("(none)");
    let cached = if submitted.cached == Some(true) {
        "cached (Wave had built the same request before)"
    } else {
        "not cached (a new build)"
    };
    out.push_str(&format!("build: {build_id}, {cached}\n"));
    match (&call.request.build_repository, call.request.freeze) {
        (Some(repo), true) => out.push_str(&format!("frozen: a permanent image in {repo}\n")),
        (Some(repo), false) => out.push_str(&format!(
            "not frozen: pushed to {repo} and served as an ephemeral Wave image\n"
        )),
        (None, _) => match &submitted.expiration {
            Some(until) => out.push_str(&format!(
                "ephemeral: the Wave image can be pulled until {until}\n"
            )),
            None => out.push_str("ephemeral: a Wave image, not frozen\n"),
        },
    }
    out.push_str(&format!(
        "packages: {} (channels {}); {}, {}\n",
        call.request.entries.join(" "),
        call.request.channels.join(", "),
        call.request.platform,
        call.request.format.as_str()
    ));
    let scan = match (
        &status.vulnerabilities,
        status.scan_id.as_ref().or(submitted.scan_id.as_ref()),
    ) {
        (Some(found), _) if found.values().any(|n| *n > 0) => {
            let mut parts: Vec<(usize, String)> = found
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(severity, n)| (severity_rank(severity), format!("{severity} {n}")))
                .collect();
            parts.sort();
            format!(
                "scan: vulnerabilities {}",
                parts
                    .into_iter()
                    .map(|(_, p)| p)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        (Some(_), _) => "scan: no vulnerabilities found".to_owned(),
        (None, Some(_)) => "scan: not finished (no result yet)".to_owned(),
        (None, None) => "no scan".to_owned(),
    };
    out.push_str(&scan);
    if !authenticated {
        out.push_str(
            "\nanonymous build (no Seqera token): Wave allows it, rate-limited (25 builds a day); set [seqera] token for more",
        );
    }
    out
}

fn severity_rank(severity: &str) -> usize {
    ["CRITICAL", "HIGH", "MEDIUM", "LOW"]
        .iter()
        .position(|s| s.eq_ignore_ascii_case(severity))
        .unwrap_or(4)
}

/// The package a conda spec names: `bioconda::samtools=1.21` → `samtools`.
fn package_name(spec: &str) -> &str {
    let spec = spec.rsplit_once("::").map_or(spec, |(_, name)| name);
    spec.split(['=', '<', '>', '!', ' ']).next().unwrap_or(spec)
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
