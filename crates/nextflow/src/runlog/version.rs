//! Whether the Nextflow a run used is one its pipeline accepts: a script that does not compile
//! is most often a pipeline written for another Nextflow (a DSL1 script on 22.10+, a 25.x
//! syntax on 23.x), which `manifest.nextflowVersion` states.

/// The sentence for `analyze_run_log` when the pipeline's requirement (`>=23.04.0`,
/// `!>=24.04.2`, `>=22.10.1, <25`) and the version that ran (`23.10.1`, `24.10.0-edge`) are
/// both known; `None` when either does not read as a version.
pub fn requirement_note(requirement: &str, running: &str) -> Option<String> {
    let ran = parse_version(running)?;
    let wanted = requirement.trim().trim_start_matches('!');
    let mut clauses = Vec::new();
    for clause in wanted.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let (op, version) = split_operator(clause);
        clauses.push((op, parse_version(version)?));
    }
    if clauses.is_empty() {
        return None;
    }
    let ok = clauses.iter().all(|(op, v)| op.holds(&ran, v));
    Some(if ok {
        // Nextflow 25.10 brought the strict (v2) syntax parser, the default since 26.04: an
        // older pipeline's config functions and loose syntax stop compiling on it.
        let strict = if ran.first().is_some_and(|major| *major >= 25) {
            " (`NXF_SYNTAX_PARSER=v1` selects the older parser)"
        } else {
            ""
        };
        format!(
            "Nextflow `{}` ran it, which the pipeline's `{}` allows; a pipeline released before that Nextflow may use syntax it no longer accepts{strict}, else the code itself is wrong",
            running.trim(),
            requirement.trim()
        )
    } else {
        let floor = clauses
            .iter()
            .find(|(op, _)| matches!(op, Op::AtLeast | Op::Above | Op::Exactly))
            .map(|(_, v)| join(v));
        let how = match floor {
            Some(floor) => {
                format!("run it with `NXF_VER={floor} nextflow run …` or a newer Nextflow")
            }
            None => "run it with a Nextflow the requirement allows (`NXF_VER=…`)".to_string(),
        };
        format!(
            "Nextflow `{}` ran it, and the pipeline asks `{}` (`manifest.nextflowVersion`): {how}",
            running.trim(),
            requirement.trim()
        )
    })
}

#[derive(Debug, Clone, Copy)]
enum Op {
    AtLeast,
    Above,
    AtMost,
    Below,
    Exactly,
}

impl Op {
    fn holds(self, ran: &[u64], wanted: &[u64]) -> bool {
        let order = compare(ran, wanted);
        match self {
            Op::AtLeast => order.is_ge(),
            Op::Above => order.is_gt(),
            Op::AtMost => order.is_le(),
            Op::Below => order.is_lt(),
            Op::Exactly => order.is_eq(),
        }
    }
}

fn split_operator(clause: &str) -> (Op, &str) {
    for (prefix, op) in [
        (">=", Op::AtLeast),
        ("<=", Op::AtMost),
        ("==", Op::Exactly),
        (">", Op::Above),
        ("<", Op::Below),
        ("=", Op::Exactly),
    ] {
        if let Some(rest) = clause.strip_prefix(prefix) {
            return (op, rest.trim());
        }
    }
    // A bare version is Nextflow's `>=`.
    (Op::AtLeast, clause)
}

/// `24.10.0-edge` → `[24, 10, 0]`; at most four parts, each a number.
fn parse_version(text: &str) -> Option<Vec<u64>> {
    let core = text.trim().split(['-', '+', ' ']).next()?;
    let parts: Option<Vec<u64>> = core.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty() && p.len() <= 4)
}

/// Missing parts count as 0: `24.10` is `24.10.0`.
fn compare(a: &[u64], b: &[u64]) -> std::cmp::Ordering {
    let len = a.len().max(b.len());
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    (0..len)
        .map(|i| at(a, i).cmp(&at(b, i)))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

fn join(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_nextflow_than_the_pipeline_asks_is_named_with_the_fix() {
        let note = requirement_note("!>=24.04.2", "23.10.1").expect("a note");
        assert!(
            note.contains("`23.10.1`") && note.contains("`!>=24.04.2`"),
            "{note}"
        );
        assert!(note.contains("NXF_VER=24.4.2"), "{note}");
    }

    #[test]
    fn a_version_the_pipeline_allows_points_at_the_code() {
        let note = requirement_note(">=23.04.0", "24.10.0-edge").expect("a note");
        assert!(
            note.contains("allows") && !note.contains("NXF_SYNTAX_PARSER"),
            "{note}"
        );
        let note = requirement_note("!>=23.04.0", "26.04.1").expect("a note");
        assert!(note.contains("NXF_SYNTAX_PARSER=v1"), "{note}");
        assert!(
            requirement_note(">=22.10.1, <25", "25.04.0").is_some_and(|n| !n.contains("allows"))
        );
        assert!(requirement_note("24.04", "24.04.0").is_some_and(|n| n.contains("allows")));
    }

    #[test]
    fn what_is_not_a_version_gives_no_note() {
        assert_eq!(requirement_note("${nfver}", "23.10.1"), None);
        assert_eq!(requirement_note(">=23.04.0", "unknown"), None);
        assert_eq!(requirement_note("", "23.10.1"), None);
    }
}
