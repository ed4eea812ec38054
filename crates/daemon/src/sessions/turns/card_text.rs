//! A permission card as a person reads it: one sentence saying what Codaris wants to do
//! ("Codaris wants to edit `src/main.rs` (3 lines changed)") and, when the daemon could work it
//! out, a preview of what the call would do. The policy's own sentence (written for the model:
//! "… needs the user's approval …; wait for their answer") stays in the ledger's card record.

use codaris_policy::{Capability, CapabilityName, Code};
use codaris_proto::v1;
use codaris_tools::preview::CallPreview;

/// The card's sentence for the person: what the call would do, from its preview when there is
/// one, else from the capability it needs; and why it is asked when that is not the ordinary
/// permission prompt (outside the allowed folders, a read-only turn).
pub(super) fn person_sentence(
    tool: &str,
    capability: Option<&Capability>,
    code: Code,
    preview: Option<&CallPreview>,
    cwd: &str,
) -> String {
    let action = match preview {
        Some(preview) => preview.action.clone(),
        None => capability_action(tool, capability, cwd),
    };
    let mut sentence = format!("Codaris wants to {action}");
    match code {
        Code::ReadOutsideFence | Code::MutateOutsideFence => {
            sentence.push_str(", outside the allowed folders");
        }
        Code::ReadOnlyActivity => sentence.push_str(", in a read-only turn"),
        Code::AskedByHook => sentence.push_str(", and an operator's hook asks you first"),
        _ => {}
    }
    sentence
}

/// A card's words: the sentence the ledger records (the policy's), the one the person is
/// shown, and what the call would do.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CardText {
    pub(super) recorded: String,
    pub(super) shown: String,
    pub(super) preview: Option<v1::CardPreview>,
}

/// The preview on the wire.
pub(super) fn preview_wire(preview: &CallPreview) -> v1::CardPreview {
    v1::CardPreview {
        kind: preview.kind.as_str().to_owned(),
        text: preview.text.clone(),
        path: preview.path.clone().unwrap_or_default(),
    }
}

/// What a call needing `capability` does, when there is no preview to say it better.
fn capability_action(tool: &str, capability: Option<&Capability>, cwd: &str) -> String {
    let Some(capability) = capability else {
        return format!("use `{tool}`");
    };
    let target = capability
        .path
        .as_deref()
        .map(|path| format!("`{}`", relative(path, cwd)));
    let on = target.clone().unwrap_or_else(|| "it".to_owned());
    match capability.name {
        CapabilityName::ReadOutsideFence => format!("read {on} with `{tool}`"),
        CapabilityName::Write | CapabilityName::MutateOutsideFence => {
            format!("change {on} with `{tool}`")
        }
        CapabilityName::RunCommand => format!("run a command in {on}"),
        CapabilityName::ChangeConfig => format!("change its configuration with `{tool}`"),
        CapabilityName::SendHttp => format!("send a request to {on} with `{tool}`"),
        CapabilityName::UseTool => format!("use `{tool}`, which acts outside the session"),
        CapabilityName::RunProgram => format!("run {on}"),
        CapabilityName::RunPipeline => format!("run the pipeline {on}"),
        CapabilityName::PushImage => format!("push an image to the registry {on}"),
        // The target names the workspace, the compute environment and the work dir.
        CapabilityName::LaunchOnPlatform => {
            format!("launch a pipeline on Seqera Platform in {on}")
        }
    }
}

/// `path` relative to `cwd` when it lies inside it (component by component), else as given.
fn relative(path: &str, cwd: &str) -> String {
    match std::path::Path::new(path).strip_prefix(cwd) {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.display().to_string(),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codaris_tools::preview::PreviewKind;

    fn capability(name: CapabilityName, path: &str) -> Capability {
        Capability {
            name,
            path: Some(path.to_owned()),
        }
    }

    #[test]
    fn the_sentence_says_what_the_call_would_do_for_a_person() {
        let preview = CallPreview {
            kind: PreviewKind::Diff,
            text: String::new(),
            path: Some("src/main.rs".to_owned()),
            action: "edit `src/main.rs` (3 lines changed)".to_owned(),
        };
        let write = capability(CapabilityName::Write, "/w/p/src/main.rs");
        assert_eq!(
            person_sentence(
                "edit",
                Some(&write),
                Code::NeedsApproval,
                Some(&preview),
                "/w/p"
            ),
            "Codaris wants to edit `src/main.rs` (3 lines changed)"
        );
        let outside = capability(CapabilityName::ReadOutsideFence, "/etc/hosts");
        assert_eq!(
            person_sentence(
                "read_file",
                Some(&outside),
                Code::ReadOutsideFence,
                None,
                "/w/p"
            ),
            "Codaris wants to read `/etc/hosts` with `read_file`, outside the allowed folders"
        );
        let rm = capability(CapabilityName::Write, "/w/p/old.txt");
        assert_eq!(
            person_sentence("rm", Some(&rm), Code::NeedsApproval, None, "/w/p"),
            "Codaris wants to change `old.txt` with `rm`"
        );
        assert_eq!(
            person_sentence("x", None, Code::NeedsApproval, None, "/w/p"),
            "Codaris wants to use `x`"
        );
        assert_eq!(relative("/w/project/a", "/w/p"), "/w/project/a");
    }
}
