//! A session's operating mode (agent, plan, ask) and permission mode (ask, accept_edits,
//! bypass) as ACP shows them: the `modes` of a session and two `select` config options. They
//! only say what the session asks for: the policy still decides every call at dispatch.

use agent_client_protocol::v1::schema::{
    AvailableCommand, SessionConfigOption, SessionConfigSelectOption, SessionMode, SessionModeState,
};
use codaris_proto::v1;

/// The config option that holds the operating mode (the same values as the modes).
pub const MODE_OPTION: &str = "mode";
/// The config option that holds the permission mode.
pub const PERMISSION_OPTION: &str = "permission_mode";

/// Each operating mode: its id on the wire, its name and what it does.
const ACTIVITIES: [(v1::Activity, &str, &str, &str); 3] = [
    (
        v1::Activity::Agent,
        "agent",
        "Agent",
        "reads, edits and runs commands, asking as the permission mode says",
    ),
    (
        v1::Activity::Plan,
        "plan",
        "Plan",
        "reads and plans; every write and command is refused",
    ),
    (
        v1::Activity::Ask,
        "ask",
        "Ask",
        "answers questions from what it reads; changes nothing",
    ),
];

/// Each permission mode: its id on the wire, its name and what it does.
const PERMISSIONS: [(v1::PermissionMode, &str, &str, &str); 3] = [
    (
        v1::PermissionMode::Ask,
        "ask",
        "Ask",
        "a card for every write, command and fetch the policy does not allow",
    ),
    (
        v1::PermissionMode::AcceptEdits,
        "accept_edits",
        "Accept edits",
        "edits inside the project without a card; commands still ask",
    ),
    (
        v1::PermissionMode::Bypass,
        "bypass",
        "Bypass",
        "no cards; the fence and the policy's refusals still hold",
    ),
];

/// The wire id of an operating mode (`agent` for an unknown one, as the daemon defaults).
pub fn activity_id(activity: i32) -> &'static str {
    ACTIVITIES
        .iter()
        .find(|(a, ..)| i32::from(*a) == activity)
        .map_or("agent", |(_, id, ..)| id)
}

/// The operating mode an editor's id names; `None` for any other id.
pub fn activity_of(id: &str) -> Option<v1::Activity> {
    ACTIVITIES
        .iter()
        .find(|(_, known, ..)| *known == id)
        .map(|(a, ..)| *a)
}

/// The wire id of a permission mode (`ask` for an unknown one).
pub fn permission_id(mode: i32) -> &'static str {
    PERMISSIONS
        .iter()
        .find(|(m, ..)| i32::from(*m) == mode)
        .map_or("ask", |(_, id, ..)| id)
}

/// The permission mode an editor's id names; `None` for any other id.
pub fn permission_of(id: &str) -> Option<v1::PermissionMode> {
    PERMISSIONS
        .iter()
        .find(|(_, known, ..)| *known == id)
        .map(|(m, ..)| *m)
}

/// The session's modes, the current one first named.
pub fn modes(session: &v1::Session) -> SessionModeState {
    SessionModeState::new(
        activity_id(session.activity),
        ACTIVITIES
            .iter()
            .map(|(_, id, name, what)| SessionMode::new(*id, *name).description(*what))
            .collect(),
    )
}

/// The session's two config options, with their current values.
pub fn config_options(session: &v1::Session) -> Vec<SessionConfigOption> {
    let select = |list: &[(&'static str, &'static str, &'static str)]| {
        list.iter()
            .map(|(id, name, what)| SessionConfigSelectOption::new(*id, *name).description(*what))
            .collect::<Vec<_>>()
    };
    let activities: Vec<_> = ACTIVITIES.iter().map(|(_, a, b, c)| (*a, *b, *c)).collect();
    let permissions: Vec<_> = PERMISSIONS
        .iter()
        .map(|(_, a, b, c)| (*a, *b, *c))
        .collect();
    vec![
        SessionConfigOption::select(
            MODE_OPTION,
            "Mode",
            activity_id(session.activity),
            select(&activities),
        )
        .description("what the agent may do at all"),
        SessionConfigOption::select(
            PERMISSION_OPTION,
            "Permissions",
            permission_id(session.permission_mode),
            select(&permissions),
        )
        .description("what it asks before doing"),
    ]
}

/// The agent's slash commands, typed at the start of a prompt.
pub fn commands() -> Vec<AvailableCommand> {
    use codaris_agent::Command;
    Command::ALL
        .into_iter()
        .map(|command| {
            let what = match command {
                Command::Review => "review a pipeline or code, read-only",
                Command::Audit => "the compliance audit, report only",
                Command::Remediate | Command::Autofix => "audit and fix compliance findings",
                Command::Fix => "apply a remediation plan",
                Command::Rules => "list the compliance rules",
                Command::SearchData => "search GEO, SRA and PubMed",
                Command::Extend => "work on a pipeline extension",
                Command::Run => "run, test and debug a pipeline",
                Command::Repair => "run a pipeline and repair what breaks",
                Command::Research => "a research turn",
            };
            AvailableCommand::new(command.as_str().trim_start_matches('/'), what)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_mode_id_round_trips_and_an_unknown_one_names_none() {
        for (activity, id, ..) in ACTIVITIES {
            assert_eq!(activity_of(activity_id(activity.into())), Some(activity));
            assert_eq!(activity_of(id), Some(activity));
        }
        for (mode, ..) in PERMISSIONS {
            assert_eq!(permission_of(permission_id(mode.into())), Some(mode));
        }
        assert_eq!(activity_of("Agent"), None);
        assert_eq!(permission_of("../bypass"), None);
    }

    #[test]
    fn the_options_carry_the_sessions_current_values() {
        let session = v1::Session {
            activity: v1::Activity::Plan.into(),
            permission_mode: v1::PermissionMode::AcceptEdits.into(),
            ..v1::Session::default()
        };
        let wire = serde_json::to_value(config_options(&session)).unwrap();
        assert_eq!(wire[0]["id"], "mode");
        assert_eq!(wire[0]["currentValue"], "plan");
        assert_eq!(wire[1]["id"], "permission_mode");
        assert_eq!(wire[1]["currentValue"], "accept_edits");
        assert_eq!(
            serde_json::to_value(modes(&session)).unwrap()["currentModeId"],
            "plan"
        );
    }
}
