use super::*;

fn need(name: CapabilityName, target: &str) -> Need<'_> {
    Need {
        name,
        target: Some(Cow::Borrowed(target)),
    }
}

/// One finding per arm of the table, with the code it must produce.
fn every_arm() -> Vec<(Finding<'static>, Code)> {
    let write = || need(CapabilityName::Write, "/w/a\nb");
    let hook = |reason: &str| -> &'static HookAnswer {
        Box::leak(Box::new(HookAnswer {
            matcher: "write|edit".to_owned(),
            command: vec!["/etc/codaris/hooks/check\n.py".to_owned()],
            decision: crate::hook::HookDecision::Deny,
            reason: reason.to_owned(),
            updated_input: false,
        }))
    };
    // A test's finding lives as long as the test binary.
    let repeat: &'static RepeatedSearch = Box::leak(Box::new(RepeatedSearch {
        query: "lint".to_owned(),
        bound: vec!["nf_lint".to_owned()],
        repeat: 4,
        max_repeats: 4,
    }));
    vec![
        (Finding::RepeatedSearch(repeat), Code::RepeatedSearch),
        (
            Finding::UnknownTool {
                closest: vec!["read_file".to_owned()],
                not_built: false,
            },
            Code::UnknownTool,
        ),
        (
            Finding::Withheld(Withholding::AuditTurn),
            Code::ToolWithheld,
        ),
        (
            Finding::DefinitionChanged("its description changed\nsince approval"),
            Code::DefinitionChanged,
        ),
        (Finding::SlashRequired(&["/fix"]), Code::SlashRequired),
        (Finding::NotBound, Code::NotBound),
        (Finding::ModeForbids(OperatingMode::Ask), Code::ModeForbids),
        (
            Finding::ModeReadOnly {
                mode: OperatingMode::Plan,
                need: write(),
            },
            Code::ReadOnlyActivity,
        ),
        (
            Finding::ArgsNotObject(JsonKind::String),
            Code::ArgsNotObject,
        ),
        (
            Finding::BadPath {
                arg: "path",
                why: BadPath::Nul,
            },
            Code::BadPath,
        ),
        (
            Finding::ProtectedPath {
                path: Cow::Borrowed("/w/.git"),
                why: Protection::Git,
            },
            Code::ProtectedPath,
        ),
        (
            Finding::ReadOnlyActivity {
                activity: Activity::Plan,
                need: write(),
            },
            Code::ReadOnlyActivity,
        ),
        (
            Finding::ReadOutsideFence(need(CapabilityName::ReadOutsideFence, "/etc")),
            Code::ReadOutsideFence,
        ),
        (
            Finding::MutateOutsideFence(need(CapabilityName::MutateOutsideFence, "/etc")),
            Code::MutateOutsideFence,
        ),
        (
            Finding::DeniedByUser(Need {
                name: CapabilityName::ChangeConfig,
                target: None,
            }),
            Code::DeniedByUser,
        ),
        (
            Finding::RefusedAtCard(Box::leak(Box::new(Capability::new(
                CapabilityName::Write,
                Some("/w/a\nb".to_owned()),
            )))),
            Code::DeniedByUser,
        ),
        (
            Finding::RegistryNotListed(need(CapabilityName::PushImage, "quay.io/x\ny")),
            Code::RegistryNotListed,
        ),
        (
            Finding::ComputeEnvNotListed(Some("ce\nx")),
            Code::ComputeEnvNotListed,
        ),
        (
            Finding::ComputeEnvNotListed(None),
            Code::ComputeEnvNotListed,
        ),
        (
            Finding::SamplesheetNotGated {
                param: "input".into(),
                value: "/w/s\n.csv".into(),
                local: true,
            },
            Code::SamplesheetNotGated,
        ),
        (
            Finding::SamplesheetNotGated {
                param: "input".into(),
                value: "ftp://x".into(),
                local: false,
            },
            Code::SamplesheetNotGated,
        ),
        (
            Finding::NeedsApproval {
                mode: PermissionMode::Ask,
                need: write(),
            },
            Code::NeedsApproval,
        ),
        (
            Finding::AllowedByGrant {
                need: write(),
                used: vec![],
            },
            Code::AllowedByGrant,
        ),
        (
            Finding::AllowedByMode(PermissionMode::Bypass),
            Code::AllowedByMode,
        ),
        (Finding::AllowedByDefault, Code::AllowedByDefault),
        (
            Finding::BlockedByHook(hook("no `rm`.\nplease.")),
            Code::BlockedByHook,
        ),
        (Finding::BlockedByHook(hook("")), Code::BlockedByHook),
        (Finding::RefusedAtHookCard(hook("")), Code::DeniedByUser),
        (
            Finding::AskedByHook(hook("review first")),
            Code::AskedByHook,
        ),
        (
            Finding::AllowedByHook {
                answer: hook("safe"),
                need: write(),
            },
            Code::AllowedByHook,
        ),
    ]
}

#[test]
fn every_arm_gives_its_code_a_one_line_sentence_and_the_right_capability() {
    let arms = every_arm();
    for code in Code::ALL {
        assert!(arms.iter().any(|(_, c)| *c == code), "no arm for {code}");
    }
    for (finding, code) in arms {
        // A mode's refusal names the change, yet no grant lifts it.
        let by_mode = matches!(finding, Finding::ModeReadOnly { .. });
        let d = decide(
            &ToolId::parse("to`ol"),
            finding,
            RuleSet::default(),
            &GrantSet::new(),
        );
        assert_eq!(d.code, code);
        assert_eq!(d.verdict, code.verdict());
        let s = &d.sentence;
        // Lowercase, or a name in backticks (the guard's sentences start with the tool).
        assert!(
            s.starts_with(|c: char| c.is_ascii_lowercase() || c == '`'),
            "{s}"
        );
        assert!(!s.ends_with('.') && !s.contains('\n'), "{s}");
        // A refusal a grant could lift says how to ask for it; a prompt and a recorded
        // refusal do not (the card is already coming, or the answer was already no).
        let liftable = !by_mode
            && matches!(
                code,
                Code::ReadOnlyActivity | Code::ReadOutsideFence | Code::MutateOutsideFence
            );
        assert_eq!(s.contains("request_capability"), liftable, "{s}");
    }
}
