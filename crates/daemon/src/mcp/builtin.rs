//! The built-in MCP server `seqera`: the program `codaris-seqera-mcp` installed beside `codarisd`
//! (its own binary, so the child is not the daemon's whole image again), run by the daemon like
//! any other stdio server, with three differences that follow from its being part of Codaris:
//!
//! - Its tools are switched off until the person switches them on, one by one (`codaris tools
//!   enable seqera__lint_nextflow`) or all at once (`codaris mcp enable seqera`).
//! - It is not pinned: its definitions and its launch (the daemon's own program, its settings)
//!   change with Codaris itself, not behind the person's back.
//! - `build_container_image` is the policy's `push` class (`push_image` for a registry the
//!   operator lists), `launch_pipeline` the `launch` class (`launch_on_platform` for the
//!   workspace, compute environment and work dir, a card in every mode), and relative path arguments are made absolute against the session's
//!   directory before the call leaves, since the server runs in the daemon's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use codaris_mcp::{Approval, ServerName, ServerSpec, Transport};
use codaris_seqera::SeqeraSetup;
use serde_json::Value;

use super::paths::PATH_ARGS;

/// The built-in server's name: reserved, so no configuration or registration can take it.
pub const SEQERA: &str = "seqera";

/// The built-in server's program, found in the directory of the daemon's own executable.
pub const SEQERA_PROGRAM: &str = "codaris-seqera-mcp";

/// The built-in server's program is not beside the daemon's.
#[derive(Debug, thiserror::Error)]
#[error(
    "the built-in MCP server `seqera` cannot start: `{}` is missing (install it beside codarisd; `cargo build --bins` builds it)",
    path.display()
)]
pub struct ProgramMissing {
    pub path: PathBuf,
}

/// Where the built-in server's program is: `codaris-seqera-mcp` in the directory of `daemon`
/// (the daemon's own executable), whether or not it is there; [`ProgramMissing`] says when it
/// is not, so the daemon can say so in one line and still list the server (as failed).
pub fn seqera_program(daemon: &Path) -> (PathBuf, Option<ProgramMissing>) {
    let path = daemon
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(SEQERA_PROGRAM);
    let missing = (!path.is_file()).then(|| ProgramMissing { path: path.clone() });
    (path, missing)
}

/// Its tool that can push an image to a registry.
pub const BUILD_CONTAINER_IMAGE: &str = "build_container_image";

/// Its tool that launches a run on Seqera Platform: the policy's `launch` class.
pub const LAUNCH_PIPELINE: &str = codaris_seqera::launch::LAUNCH_PIPELINE;

/// Words its tools are found by, beside their names and descriptions.
const KEYWORDS: [&str; 10] = [
    "seqera",
    "wave",
    "container",
    "docker",
    "singularity",
    "conda",
    "image",
    "lint",
    "platform",
    "tower",
];

/// Whether `name` is the built-in server.
pub fn is_builtin(name: &ServerName) -> bool {
    name.as_str() == SEQERA
}

/// The registration of `seqera`, started as `program` (see [`seqera_program`]) with `setup` in
/// its environment. A build may run for `setup.build_timeout`, so a call may too.
pub fn seqera_spec(program: &Path, setup: &SeqeraSetup) -> Option<ServerSpec> {
    let name = ServerName::parse(SEQERA).ok()?;
    let env: BTreeMap<String, String> = setup
        .to_env()
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
    Some(ServerSpec {
        name,
        transport: Transport::Stdio {
            command: program.display().to_string(),
            args: Vec::new(),
            env,
            cwd: None,
        },
        keywords: KEYWORDS.iter().map(|k| (*k).to_owned()).collect(),
        // Its own annotations: `lint_nextflow` and the Platform tools read only.
        trust: true,
        enabled: true,
        approval: Approval::Never,
        share_roots: false,
        startup_timeout: None,
        tool_timeout: Some(setup.build_timeout + std::time::Duration::from_secs(60)),
        output_limits: None,
    })
}

/// `args` with every relative path argument made absolute against `cwd` (where the policy
/// resolved it); anything else as it was.
pub fn absolute_paths(args: &Value, cwd: &str) -> Value {
    let mut args = args.clone();
    if let Some(object) = args.as_object_mut() {
        for name in PATH_ARGS {
            if let Some(Value::String(path)) = object.get_mut(name)
                && !path.is_empty()
                && !Path::new(path.as_str()).is_absolute()
            {
                *path = Path::new(cwd).join(path.as_str()).display().to_string();
            }
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn relative_paths_resolve_against_the_session_and_the_rest_is_kept() {
        let args = json!({"path": "pipelines/rnaseq", "file": "/abs/x", "tool": "samtools"});
        assert_eq!(
            absolute_paths(&args, "/w/proj"),
            json!({"path": "/w/proj/pipelines/rnaseq", "file": "/abs/x", "tool": "samtools"})
        );
        assert_eq!(absolute_paths(&json!("x"), "/w"), json!("x"));
        assert_eq!(
            absolute_paths(&json!({"path": 3}), "/w"),
            json!({"path": 3})
        );
    }

    #[test]
    fn the_spec_runs_the_server_s_own_program_with_settings_and_never_pins() {
        let setup = SeqeraSetup {
            token: Some("tok-123".into()),
            registries: vec!["quay.io/lab".into()],
            ..SeqeraSetup::default()
        };
        let spec = seqera_spec(Path::new("/usr/bin/codaris-seqera-mcp"), &setup);
        let Some(spec) = spec else {
            panic!("the built-in server has a valid name");
        };
        assert!(is_builtin(&spec.name));
        let Transport::Stdio {
            command, args, env, ..
        } = &spec.transport
        else {
            panic!("a stdio server");
        };
        assert_eq!(command, "/usr/bin/codaris-seqera-mcp");
        assert!(args.is_empty(), "{args:?}");
        assert_eq!(
            env.get("CODARIS_SEQERA_REGISTRIES").map(String::as_str),
            Some("quay.io/lab")
        );
        assert_eq!(
            env.get("TOWER_ACCESS_TOKEN").map(String::as_str),
            Some("tok-123")
        );
        assert!(spec.trust);
    }

    #[test]
    fn the_program_is_looked_for_beside_the_daemon_and_its_absence_named() {
        let dir = tempfile::tempdir().unwrap();
        let daemon = dir.path().join("codarisd");
        let (path, missing) = seqera_program(&daemon);
        assert_eq!(path, dir.path().join("codaris-seqera-mcp"));
        let Some(missing) = missing else {
            panic!("nothing is beside the daemon yet");
        };
        assert_eq!(
            missing.to_string(),
            format!(
                "the built-in MCP server `seqera` cannot start: `{}` is missing (install it beside codarisd; `cargo build --bins` builds it)",
                path.display()
            )
        );
        std::fs::write(&path, "").unwrap();
        assert!(seqera_program(&daemon).1.is_none());
    }
}
