//! Scheduled jobs: one Markdown file per job, its settings in a front matter block and its
//! prompt as the body, read the way agent definitions are ([`crate::agents`]):
//!
//! ```text
//! ---
//! description: Re-run the pipeline's tests every night
//! schedule: 0 3 * * *
//! timezone: Europe/Berlin
//! mode: agent
//! permission_mode: ask
//! ---
//! Run `nf-test test` in this pipeline and report what failed.
//! ```
//!
//! `schedule` is a cron expression (five fields, or six with seconds; `@daily` and the other
//! nicknames) or an interval (`every 30m`, `every 2h`, `every 1d`). A cron schedule's next run is
//! computed in the job's `timezone` (an IANA name; the daemon's local zone when absent), so
//! `0 3 * * *` stays at three in the morning across a daylight-saving change.
//!
//! Pure: text in, job out, and the next run from a given instant; the daemon finds and writes
//! the files (`<config dir>/scheduler`, `<project>/.codaris/scheduler`) and keeps the clock.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};

use crate::front_matter;

/// The longest job file read: anything longer is not a job someone wrote.
pub const JOB_MAX_BYTES: usize = 64 * 1024;
/// The longest job id (the file's basename).
pub const JOB_ID_MAX_CHARS: usize = 64;
/// The shortest interval a job may run at: a job is scheduled work, not a polling loop.
pub const MIN_INTERVAL_SECONDS: u64 = 60;
/// The operating modes a job may run in, as `mode:` names them.
pub const MODES: [&str; 3] = ["agent", "plan", "ask"];
/// The permission modes a job may run in, as `permission_mode:` names them.
pub const PERMISSION_MODES: [&str; 3] = ["ask", "accept_edits", "bypass"];

/// One job as its file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// One line: what it is for.
    pub description: String,
    /// As written: a cron expression or `every <n><s|m|h|d>`.
    pub schedule: String,
    /// An IANA time zone the cron schedule is read in; `None`: the daemon's local zone.
    pub timezone: Option<String>,
    /// A paused job never fires on its schedule (a run started by hand still runs).
    pub paused: bool,
    /// Where its runs work; `None`: the project's directory (a project job) or the home
    /// directory (a user job).
    pub cwd: Option<String>,
    /// The model its runs ask, as `switch_model` names one; `None`: the configured default.
    pub model: Option<String>,
    /// The operating mode its runs are in ([`MODES`]).
    pub mode: String,
    /// The agent definition its runs run under; `None`: `general`.
    pub agent: Option<String>,
    /// The permission mode its runs are in ([`PERMISSION_MODES`]).
    pub permission_mode: String,
    /// The prompt each run is given.
    pub body: String,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            description: String::new(),
            schedule: String::new(),
            timezone: None,
            paused: false,
            cwd: None,
            model: None,
            mode: "agent".to_owned(),
            agent: None,
            permission_mode: "ask".to_owned(),
            body: String::new(),
        }
    }
}

/// Why a job (its file, or the fields a tool gave) does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    #[error(
        "`{id}` is not a job id (1 to {JOB_ID_MAX_CHARS} of a-z, 0-9, `-`, `_`, starting with a letter or digit)"
    )]
    BadId { id: String },
    #[error("it does not start with a front matter block (`---` on the first line)")]
    NoFrontMatter,
    #[error("its front matter block has no closing `---`")]
    Unterminated,
    #[error("it is {bytes} bytes; a job is at most {JOB_MAX_BYTES}")]
    TooLong { bytes: usize },
    #[error("`{field}` is missing or empty")]
    Missing { field: &'static str },
    #[error("`{field}` is one line without control characters")]
    NotOneLine { field: &'static str },
    #[error(
        "`schedule` `{schedule}` is neither a cron expression nor `every <n><s|m|h|d>`: {reason}"
    )]
    BadSchedule { schedule: String, reason: String },
    #[error("`schedule` `{schedule}` runs more often than every {MIN_INTERVAL_SECONDS} s")]
    TooOften { schedule: String },
    #[error("`timezone` `{timezone}` is not an IANA time zone such as `Europe/Berlin`")]
    BadTimezone { timezone: String },
    #[error("`paused` is `true` or `false`, not `{value}`")]
    BadPaused { value: String },
    #[error("`mode` is one of agent, plan, ask; not `{value}`")]
    BadMode { value: String },
    #[error("`permission_mode` is one of ask, accept_edits, bypass; not `{value}`")]
    BadPermissionMode { value: String },
    #[error("`agent` `{value}` is not an agent definition's name")]
    BadAgent { value: String },
}

/// True for a job id: the basename of a job's file, so no `/`, `..` or leading dot.
pub fn is_job_id(id: &str) -> bool {
    crate::agents::is_agent_name(id) && id.chars().count() <= JOB_ID_MAX_CHARS
}

/// `id` as a job id, or why not.
pub fn job_id(id: &str) -> Result<&str, JobError> {
    if is_job_id(id) {
        Ok(id)
    } else {
        Err(JobError::BadId {
            id: id.chars().take(80).collect(),
        })
    }
}

/// A schedule, read.
#[derive(Debug, Clone)]
pub enum Schedule {
    Cron(Box<croner::Cron>),
    /// Every so many seconds, counted from the last run (or from when the job was first seen).
    Every(u64),
}

impl Schedule {
    /// Reads `text` as [`Job::schedule`] says.
    pub fn parse(text: &str) -> Result<Schedule, JobError> {
        let text = text.trim();
        let bad = |reason: String| JobError::BadSchedule {
            schedule: text.to_owned(),
            reason,
        };
        if let Some(rest) = text.strip_prefix("every ") {
            let rest = rest.trim();
            let split = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let (count, unit) = rest.split_at(split);
            let count: u64 = count
                .parse()
                .map_err(|_| bad("an interval is a whole number and a unit".to_owned()))?;
            let unit = match unit.trim() {
                "s" => 1,
                "m" => 60,
                "h" => 60 * 60,
                "d" => 24 * 60 * 60,
                other => return Err(bad(format!("`{other}` is not one of s, m, h, d"))),
            };
            let seconds = count.saturating_mul(unit);
            if seconds < MIN_INTERVAL_SECONDS {
                return Err(JobError::TooOften {
                    schedule: text.to_owned(),
                });
            }
            return Ok(Schedule::Every(seconds));
        }
        let cron = croner::Cron::new(text)
            .with_seconds_optional()
            .parse()
            .map_err(|err| bad(err.to_string()))?;
        // Six fields with a seconds field that fires more than once a minute are a polling
        // loop, which a schedule is not.
        if let Some(seconds) = text.split_whitespace().next()
            && text.split_whitespace().count() == 6
            && seconds.parse::<u8>().is_err()
        {
            return Err(JobError::TooOften {
                schedule: text.to_owned(),
            });
        }
        Ok(Schedule::Cron(Box::new(cron)))
    }

    /// The first run strictly after `after`: a cron schedule's next occurrence in `zone`, an
    /// interval's `after` plus the interval; `None` when a cron expression never fires again.
    pub fn next_after(&self, after: DateTime<Utc>, zone: Zone) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Every(seconds) => {
                after.checked_add_signed(chrono::Duration::seconds(i64::try_from(*seconds).ok()?))
            }
            Schedule::Cron(cron) => match zone {
                Zone::Named(tz) => next_in(cron, &after.with_timezone(&tz)),
                Zone::Local => next_in(cron, &after.with_timezone(&chrono::Local)),
            },
        }
    }
}

fn next_in<Tz: TimeZone>(cron: &croner::Cron, after: &DateTime<Tz>) -> Option<DateTime<Utc>> {
    cron.find_next_occurrence(after, false)
        .ok()
        .map(|next| next.with_timezone(&Utc))
}

/// The time zone a cron schedule is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Named(chrono_tz::Tz),
    /// The daemon's local zone.
    Local,
}

impl Zone {
    /// `name` as a zone; `None`: the local one.
    pub fn parse(name: Option<&str>) -> Result<Zone, JobError> {
        match name {
            None => Ok(Zone::Local),
            Some(name) => {
                chrono_tz::Tz::from_str(name)
                    .map(Zone::Named)
                    .map_err(|_| JobError::BadTimezone {
                        timezone: name.chars().take(80).collect(),
                    })
            }
        }
    }
}

impl Job {
    /// Checks every field: the job as a tool or a file gives it can be written and run.
    pub fn check(&self) -> Result<(), JobError> {
        one_line_required("description", &self.description)?;
        one_line_required("schedule", &self.schedule)?;
        Schedule::parse(&self.schedule)?;
        Zone::parse(self.timezone.as_deref())?;
        for (field, value) in [
            ("timezone", &self.timezone),
            ("cwd", &self.cwd),
            ("model", &self.model),
            ("agent", &self.agent),
        ] {
            if let Some(value) = value {
                one_line_required(field, value)?;
            }
        }
        if !MODES.contains(&self.mode.as_str()) {
            return Err(JobError::BadMode {
                value: self.mode.clone(),
            });
        }
        if !PERMISSION_MODES.contains(&self.permission_mode.as_str()) {
            return Err(JobError::BadPermissionMode {
                value: self.permission_mode.clone(),
            });
        }
        if let Some(agent) = &self.agent
            && !crate::agents::is_agent_name(agent)
        {
            return Err(JobError::BadAgent {
                value: agent.clone(),
            });
        }
        if self.body.trim().is_empty() {
            return Err(JobError::Missing { field: "body" });
        }
        Ok(())
    }

    /// The schedule, read (the job was checked, so it reads).
    pub fn schedule(&self) -> Result<Schedule, JobError> {
        Schedule::parse(&self.schedule)
    }

    /// The zone the schedule is read in.
    pub fn zone(&self) -> Result<Zone, JobError> {
        Zone::parse(self.timezone.as_deref())
    }

    /// The file's text: front matter and body, as [`parse_job`] reads it back.
    pub fn render(&self) -> String {
        let mut text = String::from("---\n");
        let mut line = |key: &str, value: &str| {
            text.push_str(key);
            text.push_str(": ");
            text.push_str(&quoted(value));
            text.push('\n');
        };
        line("description", &self.description);
        line("schedule", &self.schedule);
        if let Some(tz) = &self.timezone {
            line("timezone", tz);
        }
        line("paused", if self.paused { "true" } else { "false" });
        if let Some(cwd) = &self.cwd {
            line("cwd", cwd);
        }
        if let Some(model) = &self.model {
            line("model", model);
        }
        line("mode", &self.mode);
        if let Some(agent) = &self.agent {
            line("agent", agent);
        }
        line("permission_mode", &self.permission_mode);
        text.push_str("---\n");
        text.push_str(self.body.trim());
        text.push('\n');
        text
    }
}

/// A value on its line, quoted when the front matter reader would read it otherwise (`#`,
/// `: `, a leading quote, `>`/`|`, surrounding spaces).
fn quoted(value: &str) -> String {
    let plain = !value.is_empty()
        && value.trim() == value
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.starts_with(['"', '\'', '>', '|', '#', '-', '[', '{', '*', '@'])
        && !value.ends_with(':');
    if plain {
        value.to_owned()
    } else if value.contains('"') {
        format!("'{value}'")
    } else {
        format!("\"{value}\"")
    }
}

fn one_line_required(field: &'static str, value: &str) -> Result<(), JobError> {
    if value.trim().is_empty() {
        return Err(JobError::Missing { field });
    }
    if value.chars().any(char::is_control) {
        return Err(JobError::NotOneLine { field });
    }
    Ok(())
}

/// Reads a job file's text.
pub fn parse_job(text: &str) -> Result<Job, JobError> {
    if text.len() > JOB_MAX_BYTES {
        return Err(JobError::TooLong { bytes: text.len() });
    }
    if !front_matter::opens(text) {
        return Err(JobError::NoFrontMatter);
    }
    let (block, body) = front_matter::split(text).ok_or(JobError::Unterminated)?;
    let fields = front_matter::fields(block);
    let text_of = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| front_matter::unquote(v.text.trim()).trim().to_owned())
            .filter(|t| !t.is_empty())
    };
    let paused = match text_of("paused").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(JobError::BadPaused {
                value: other.to_owned(),
            });
        }
    };
    let job = Job {
        description: text_of("description").unwrap_or_default(),
        schedule: text_of("schedule").unwrap_or_default(),
        timezone: text_of("timezone"),
        paused,
        cwd: text_of("cwd"),
        model: text_of("model"),
        mode: text_of("mode").unwrap_or_else(|| "agent".to_owned()),
        agent: text_of("agent"),
        permission_mode: text_of("permission_mode").unwrap_or_else(|| "ask".to_owned()),
        body: body.trim().to_owned(),
    };
    job.check()?;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_job_reads_back_what_render_wrote() {
        let job = Job {
            description: "nightly tests: the #1 job".to_owned(),
            schedule: "0 3 * * *".to_owned(),
            timezone: Some("Europe/Berlin".to_owned()),
            paused: true,
            cwd: Some("/data/pipe".to_owned()),
            model: None,
            mode: "agent".to_owned(),
            agent: Some("reviewer".to_owned()),
            permission_mode: "accept_edits".to_owned(),
            body: "Run the tests.\n\nReport.".to_owned(),
        };
        assert_eq!(parse_job(&job.render()).unwrap(), job);
    }

    #[test]
    fn a_file_that_does_not_name_a_runnable_job_is_refused() {
        let file = |front: &str| format!("---\ndescription: d\n{front}\n---\nprompt\n");
        assert!(matches!(
            parse_job(&file("schedule: 61 * * * *")),
            Err(JobError::BadSchedule { .. })
        ));
        assert!(matches!(
            parse_job(&file("schedule: every 10s")),
            Err(JobError::TooOften { .. })
        ));
        assert!(matches!(
            parse_job(&file("schedule: * * * * * *")),
            Err(JobError::TooOften { .. })
        ));
        assert!(matches!(
            parse_job(&file("schedule: every 1h\ntimezone: Mars/Base")),
            Err(JobError::BadTimezone { .. })
        ));
        assert!(matches!(
            parse_job(&file("schedule: every 1h\nmode: review")),
            Err(JobError::BadMode { .. })
        ));
        assert!(matches!(
            parse_job(&file("schedule: every 1h\npermission_mode: yolo")),
            Err(JobError::BadPermissionMode { .. })
        ));
        assert!(matches!(
            parse_job("---\ndescription: d\nschedule: every 1h\n---\n  \n"),
            Err(JobError::Missing { field: "body" })
        ));
        assert!(parse_job(&file("schedule: every 1h")).is_ok());
        for id in ["../x", ".hidden", "a/b", "", "A"] {
            assert!(!is_job_id(id), "{id}");
        }
        assert!(is_job_id("nightly-tests_2"));
    }

    #[test]
    fn a_cron_schedule_runs_at_its_hour_in_the_jobs_zone() {
        let schedule = Schedule::parse("0 3 * * *").unwrap();
        let berlin = Zone::parse(Some("Europe/Berlin")).unwrap();
        // Winter: Berlin is UTC+1, so three o'clock there is two o'clock UTC.
        assert_eq!(
            schedule.next_after(at("2026-01-10T12:00:00Z"), berlin),
            Some(at("2026-01-11T02:00:00Z"))
        );
        // Summer: UTC+2.
        assert_eq!(
            schedule.next_after(at("2026-07-10T12:00:00Z"), berlin),
            Some(at("2026-07-11T01:00:00Z"))
        );
        let every = Schedule::parse("every 2h").unwrap();
        assert_eq!(
            every.next_after(at("2026-01-10T12:00:00Z"), Zone::Local),
            Some(at("2026-01-10T14:00:00Z"))
        );
    }
}
