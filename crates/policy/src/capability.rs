//! Capabilities: what a grant permits, and what a refusal says a grant would need.

use serde::{Deserialize, Serialize};

/// The kinds of permission a person can grant on a card.
///
/// The first four are scoped to a path: a grant covers that path and everything under it,
/// compared component by component. `send_http` is scoped to one destination origin and
/// `use_tool` to one tool name, each matched exactly. `run_program` is scoped to a command
/// prefix, matched word by word. `change_config` has no scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityName {
    /// Read a path outside every allowed root.
    ReadOutsideFence,
    /// Change a path outside every allowed root.
    MutateOutsideFence,
    /// Change files at a path: the write-class prompt, and the read-only-activity override.
    Write,
    /// Run commands with a working directory at or under a path.
    RunCommand,
    /// Commit or roll back Codaris's own configuration.
    ChangeConfig,
    /// Send HTTP requests to one origin (`scheme://host[:port]`), carrying nothing else
    /// unless the target lists it after ` carrying ` (local files, a proxy, an unchecked
    /// certificate, redirects to any host).
    SendHttp,
    /// Call one named tool whose effects no path describes (pipeline runs, MCP tools, ...).
    UseTool,
    /// Run, in any directory, a command line whose every simple command starts with a prefix
    /// of words (`cargo test`, `git status`): a program-wide `run_command` permission.
    RunProgram,
    /// Run (or test) the Nextflow pipeline at a path: its tasks run what its code says, so a
    /// person approves each pipeline before its first launch.
    RunPipeline,
    /// Push a built container image to one registry (`quay.io/me`), which the operator must
    /// also list (`[seqera] registries`): images there are pulled by other people's runs.
    PushImage,
    /// Launch a pipeline on Seqera Platform, scoped to where it runs: the workspace, the
    /// compute environment and the work directory (`workspace 123; compute environment ce1;
    /// work dir s3://b/w`), so the card names all three and a grant covers exactly them.
    LaunchOnPlatform,
}

/// How a capability's `path` is compared with a grant's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// An absolute, lexically normalised path; a grant covers its descendants too.
    Path,
    /// An opaque target string (an origin, a tool name) that must match exactly.
    Exact,
    /// No target: one grant covers every use.
    Unscoped,
    /// A command prefix: a grant covers a command line whose every simple command begins with
    /// its words (see [`crate::simple_commands`]).
    Command,
}

impl CapabilityName {
    /// Every capability name, in documentation order.
    pub const ALL: [CapabilityName; 11] = [
        CapabilityName::ReadOutsideFence,
        CapabilityName::MutateOutsideFence,
        CapabilityName::Write,
        CapabilityName::RunCommand,
        CapabilityName::ChangeConfig,
        CapabilityName::SendHttp,
        CapabilityName::UseTool,
        CapabilityName::RunProgram,
        CapabilityName::RunPipeline,
        CapabilityName::PushImage,
        CapabilityName::LaunchOnPlatform,
    ];

    /// How this capability is matched against grants.
    pub fn scope(self) -> Scope {
        match self {
            CapabilityName::ReadOutsideFence
            | CapabilityName::MutateOutsideFence
            | CapabilityName::Write
            | CapabilityName::RunCommand
            | CapabilityName::RunPipeline => Scope::Path,
            CapabilityName::SendHttp
            | CapabilityName::UseTool
            | CapabilityName::PushImage
            | CapabilityName::LaunchOnPlatform => Scope::Exact,
            CapabilityName::ChangeConfig => Scope::Unscoped,
            CapabilityName::RunProgram => Scope::Command,
        }
    }

    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            CapabilityName::ReadOutsideFence => "read_outside_fence",
            CapabilityName::MutateOutsideFence => "mutate_outside_fence",
            CapabilityName::Write => "write",
            CapabilityName::RunCommand => "run_command",
            CapabilityName::ChangeConfig => "change_config",
            CapabilityName::SendHttp => "send_http",
            CapabilityName::UseTool => "use_tool",
            CapabilityName::RunProgram => "run_program",
            CapabilityName::RunPipeline => "run_pipeline",
            CapabilityName::PushImage => "push_image",
            CapabilityName::LaunchOnPlatform => "launch_on_platform",
        }
    }

    /// A dense index, used by the grant index to keep one table per name.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for CapabilityName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A capability a call needs, named in a refusal or a card so the grant can be asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    /// What the grant would permit.
    pub name: CapabilityName,
    /// Its scope: a normalised absolute path, an origin, a tool name, or `null` when unscoped.
    pub path: Option<String>,
}

impl Capability {
    /// A capability with the given scope.
    pub fn new(name: CapabilityName, path: Option<String>) -> Capability {
        Capability { name, path }
    }
}

/// Separates a `send_http` target's origin from what the request carries besides:
/// `https://api.example.org carrying file /w/a.csv; proxy http://p:3128`.
pub const HTTP_CARRYING: &str = " carrying ";

/// The destination origin of a URL, as a `send_http` capability names it: the scheme and the
/// host (with its port) in lower case, without user information, path, query or fragment. A
/// string with no scheme is treated as starting at the host. Lexical only; no lookup.
pub fn http_origin(url: &str) -> String {
    let url = url.trim();
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let mut out = String::with_capacity(scheme.len() + 3 + host.len());
    if !scheme.is_empty() {
        out.push_str(&scheme.to_ascii_lowercase());
        out.push_str("://");
    }
    out.push_str(&host.to_ascii_lowercase());
    out
}

#[cfg(test)]
mod tests {
    use super::{CapabilityName, Scope, http_origin};

    #[test]
    fn origins_drop_everything_but_scheme_host_and_port() {
        assert_eq!(
            http_origin("https://Example.org/a?b#c"),
            "https://example.org"
        );
        assert_eq!(
            http_origin("HTTP://user:pw@host:8080/x"),
            "http://host:8080"
        );
        assert_eq!(http_origin("example.org/x"), "example.org");
        assert_eq!(
            http_origin("https://evil.test?@example.org"),
            "https://evil.test"
        );
        assert_eq!(http_origin(""), "");
    }

    #[test]
    fn wire_names_match_serde_and_indexes_are_dense() {
        for (i, name) in CapabilityName::ALL.into_iter().enumerate() {
            let json = serde_json::to_value(name).ok();
            assert_eq!(json, Some(serde_json::Value::from(name.as_str())));
            assert_eq!(name.index(), i);
        }
    }

    #[test]
    fn only_directory_capabilities_cover_descendants() {
        let path_scoped: Vec<_> = CapabilityName::ALL
            .into_iter()
            .filter(|n| n.scope() == Scope::Path)
            .collect();
        assert_eq!(
            path_scoped,
            [
                CapabilityName::ReadOutsideFence,
                CapabilityName::MutateOutsideFence,
                CapabilityName::Write,
                CapabilityName::RunCommand,
                CapabilityName::RunPipeline,
            ]
        );
    }
}
