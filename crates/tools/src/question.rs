//! `question {questions[]}`: the questions the model asks, read and checked here; the daemon
//! owns the turn's stream and the person's answer, so it asks them and waits. The answers
//! are checked against the questions here too, and written here as the model reads them, so
//! every client (`codaris chat`, `codaris run --answer`, a plugin) gets the same rules.

use codaris_catalogue::question::{
    HEADER_MAX_CHARS, LABEL_MAX_CHARS, OPTIONS_MAX, QUESTIONS_MAX, TEXT_MAX_CHARS,
};
use serde_json::Value;

use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const TOOL: &str = "question";

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    pub label: String,
    pub description: String,
}

/// One multiple-choice question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionItem {
    pub header: String,
    pub question: String,
    pub options: Vec<QuestionOption>,
    /// More than one option may be chosen.
    pub multiple: bool,
    /// The person may answer in their own words.
    pub custom: bool,
}

/// The questions of one call, their arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Questions {
    pub items: Vec<QuestionItem>,
}

/// The person's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The labels chosen, as the options spell them.
    Chosen(Vec<String>),
    /// An answer in the person's own words.
    Custom(String),
    /// Nobody could answer it.
    Unanswered,
}

impl Reply {
    /// The answer to question `number` as a client sends it: chosen labels or words of
    /// its own, or neither (nobody could answer).
    pub fn of(number: usize, labels: Vec<String>, custom: String) -> Result<Reply, BadReply> {
        match (labels.is_empty(), custom.is_empty()) {
            (true, true) => Ok(Reply::Unanswered),
            (false, true) => Ok(Reply::Chosen(labels)),
            (true, false) => Ok(Reply::Custom(custom)),
            (false, false) => Err(BadReply::Both { number }),
        }
    }
}

/// Why an answer does not fit the questions; the question stays open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadReply {
    #[error("{given} answers for {asked} questions")]
    TooMany { given: usize, asked: usize },
    #[error("question {number} has no option `{label}`; its options: {labels}")]
    UnknownLabel {
        number: usize,
        label: String,
        labels: String,
    },
    #[error("question {number} takes one option, not {given}")]
    SeveralLabels { number: usize, given: usize },
    #[error("question {number} takes no answer in your own words")]
    NoCustom { number: usize },
    #[error("question {number} is answered with options or in your own words, not both")]
    Both { number: usize },
    #[error("the answer to question {number} is longer than {max} characters")]
    CustomTooLong { number: usize, max: usize },
    #[error("the answer to question {number} contains a control character")]
    CustomControl { number: usize },
}

fn model_error(why: impl std::fmt::Display) -> ToolError {
    ToolError::model(format!("{TOOL}: {why}"))
}

/// A string argument `name` of `value`: `None` when absent; refused when not a string, longer
/// than `max` characters, or holding a control character (it is shown on a terminal).
fn text<'a>(
    value: &'a Value,
    name: &str,
    max: usize,
    at: &str,
) -> Result<Option<&'a str>, ToolError> {
    let Some(found) = value.get(name).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let Some(found) = found.as_str() else {
        return Err(model_error(format!("{at} `{name}` must be a string")));
    };
    if found.chars().count() > max {
        return Err(model_error(format!(
            "{at} `{name}` is longer than {max} characters"
        )));
    }
    if found.chars().any(|c| c.is_control() && c != '\n') {
        return Err(model_error(format!(
            "{at} `{name}` contains a control character"
        )));
    }
    Ok(Some(found.trim()))
}

fn flag(value: &Value, name: &str, at: &str) -> Result<bool, ToolError> {
    match value.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(model_error(format!("{at} `{name}` must be true or false"))),
    }
}

fn read_item(value: &Value, number: usize) -> Result<QuestionItem, ToolError> {
    let at = format!("question {number}:");
    if !value.is_object() {
        return Err(model_error(format!("{at} must be an object")));
    }
    let header = text(value, "header", HEADER_MAX_CHARS, &at)?.unwrap_or_default();
    if header.contains('\n') {
        return Err(model_error(format!("{at} `header` is one line")));
    }
    let question = match text(value, "question", TEXT_MAX_CHARS, &at)? {
        Some(q) if !q.is_empty() => q,
        _ => return Err(model_error(format!("{at} `question` is required"))),
    };
    let Some(options) = value.get("options").and_then(Value::as_array) else {
        return Err(model_error(format!("{at} `options` must be a list")));
    };
    if options.is_empty() || options.len() > OPTIONS_MAX {
        return Err(model_error(format!(
            "{at} give from 1 to {OPTIONS_MAX} options, not {}",
            options.len()
        )));
    }
    let mut read: Vec<QuestionOption> = Vec::with_capacity(options.len());
    for option in options {
        let label = match text(option, "label", LABEL_MAX_CHARS, &at)? {
            Some(l) if !l.is_empty() && !l.contains('\n') => l,
            _ => {
                return Err(model_error(format!(
                    "{at} each option needs a one-line `label`"
                )));
            }
        };
        // The person (and `--answer`) names an option by its label: two alike would be one.
        if read.iter().any(|o| o.label.eq_ignore_ascii_case(label)) {
            return Err(model_error(format!(
                "{at} the label `{label}` is given twice"
            )));
        }
        let description = text(option, "description", TEXT_MAX_CHARS, &at)?.unwrap_or_default();
        read.push(QuestionOption {
            label: label.to_owned(),
            description: description.to_owned(),
        });
    }
    Ok(QuestionItem {
        header: header.to_owned(),
        question: question.to_owned(),
        options: read,
        multiple: flag(value, "multiple", &at)?,
        custom: flag(value, "custom", &at)?,
    })
}

impl Questions {
    /// Reads the arguments; a sentence for the model when they ask nothing a person can answer.
    pub fn read(args: &Value) -> Result<Questions, ToolError> {
        let Some(list) = args.get("questions").and_then(Value::as_array) else {
            return Err(model_error("`questions` must be a list of questions"));
        };
        if list.is_empty() || list.len() > QUESTIONS_MAX {
            return Err(model_error(format!(
                "ask from 1 to {QUESTIONS_MAX} questions, not {}",
                list.len()
            )));
        }
        let items = list
            .iter()
            .enumerate()
            .map(|(i, item)| read_item(item, i + 1))
            .collect::<Result<_, _>>()?;
        Ok(Questions { items })
    }

    /// Checks `replies` (in the questions' order; missing ones at the end are unanswered)
    /// and gives them back with each label spelled as its option spells it (a label is
    /// matched exactly, else ignoring ASCII case).
    pub fn accept(&self, replies: Vec<Reply>) -> Result<Vec<Reply>, BadReply> {
        if replies.len() > self.items.len() {
            return Err(BadReply::TooMany {
                given: replies.len(),
                asked: self.items.len(),
            });
        }
        let mut accepted = Vec::with_capacity(self.items.len());
        for (i, item) in self.items.iter().enumerate() {
            let number = i + 1;
            let reply = replies.get(i).cloned().unwrap_or(Reply::Unanswered);
            accepted.push(match reply {
                Reply::Unanswered => Reply::Unanswered,
                Reply::Chosen(labels) if labels.is_empty() => Reply::Unanswered,
                Reply::Chosen(labels) => {
                    if labels.len() > 1 && !item.multiple {
                        return Err(BadReply::SeveralLabels {
                            number,
                            given: labels.len(),
                        });
                    }
                    let mut chosen: Vec<String> = Vec::with_capacity(labels.len());
                    for label in labels {
                        let option = item
                            .options
                            .iter()
                            .find(|o| o.label == label)
                            .or_else(|| {
                                item.options
                                    .iter()
                                    .find(|o| o.label.eq_ignore_ascii_case(label.trim()))
                            })
                            .ok_or_else(|| BadReply::UnknownLabel {
                                number,
                                label: label.clone(),
                                labels: item
                                    .options
                                    .iter()
                                    .map(|o| format!("`{}`", o.label))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                            })?;
                        if !chosen.contains(&option.label) {
                            chosen.push(option.label.clone());
                        }
                    }
                    Reply::Chosen(chosen)
                }
                Reply::Custom(words) => {
                    if !item.custom {
                        return Err(BadReply::NoCustom { number });
                    }
                    if words.chars().count() > TEXT_MAX_CHARS {
                        return Err(BadReply::CustomTooLong {
                            number,
                            max: TEXT_MAX_CHARS,
                        });
                    }
                    if words
                        .chars()
                        .any(|c| c.is_control() && c != '\n' && c != '\t')
                    {
                        return Err(BadReply::CustomControl { number });
                    }
                    match words.trim() {
                        "" => Reply::Unanswered,
                        words => Reply::Custom(words.to_owned()),
                    }
                }
            });
        }
        Ok(accepted)
    }

    /// What the model reads for the person's `replies` (as [`Questions::accept`] gave them).
    pub fn answered(&self, replies: &[Reply]) -> String {
        if replies.iter().all(|r| *r == Reply::Unanswered) {
            return Questions::nobody();
        }
        let mut out = format!("{TOOL}: the user answered");
        for (i, item) in self.items.iter().enumerate() {
            let said = match replies.get(i).unwrap_or(&Reply::Unanswered) {
                Reply::Chosen(labels) => labels.join(", "),
                Reply::Custom(words) => format!("(in their own words) {words}"),
                Reply::Unanswered => "(no answer)".to_owned(),
            };
            out.push_str(&format!("\n{}. {}: {said}", i + 1, item.title()));
        }
        out
    }

    /// What the model reads when no answer came before `seconds` ran out.
    pub fn timed_out(seconds: u64) -> String {
        format!(
            "{TOOL}: nobody answered within {seconds} s; choose yourself and say what you chose, or ask again in your reply"
        )
    }

    /// What the model reads when the turn went away before an answer came.
    pub fn nobody() -> String {
        format!("{TOOL}: nobody could answer; choose yourself and say what you chose")
    }
}

impl QuestionItem {
    /// The header, or the question when there is none: how the answer names it.
    pub fn title(&self) -> &str {
        if self.header.is_empty() {
            &self.question
        } else {
            &self.header
        }
    }
}

/// `question`: hands the checked questions to the daemon, which asks the person and answers.
#[derive(Debug, Default)]
pub struct Question;

#[async_trait::async_trait]
impl Tool for Question {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::QUESTION
    }

    async fn call(&self, _ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let questions = Questions::read(args)?;
        // The daemon replaces this text with the answers; a host with no person to ask says so.
        let mut output = ToolOutput::text(Questions::nobody());
        output.question = Some(questions);
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked() -> Questions {
        Questions::read(&json!({"questions": [
            {"header": "Aligner", "question": "Which aligner?", "options": [
                {"label": "bwa", "description": "fast"}, {"label": "STAR"}]},
            {"question": "Which checks?", "multiple": true, "custom": true, "options": [
                {"label": "lint"}, {"label": "test"}]}
        ]}))
        .unwrap()
    }

    #[test]
    fn questions_are_read_with_their_options() {
        let q = asked();
        assert_eq!(q.items.len(), 2);
        assert_eq!(q.items[0].options[0].description, "fast");
        assert!(q.items[1].multiple && q.items[1].custom && !q.items[0].custom);
        assert_eq!(q.items[1].title(), "Which checks?");
    }

    #[test]
    fn questions_a_person_cannot_answer_are_refused() {
        for (args, says) in [
            (json!({}), "`questions` must be a list"),
            (json!({"questions": []}), "from 1 to 4 questions"),
            (
                json!({"questions": [{"question": "q"}]}),
                "`options` must be a list",
            ),
            (
                json!({"questions": [{"question": "q", "options": []}]}),
                "from 1 to 8 options",
            ),
            (
                json!({"questions": [{"question": "q", "options": [{"label": "a"}, {"label": "A"}]}]}),
                "given twice",
            ),
            (
                json!({"questions": [{"question": "q", "options": [{"label": "a\u{1b}[2J"}]}]}),
                "control character",
            ),
            (
                json!({"questions": [{"question": "", "options": [{"label": "a"}]}]}),
                "`question` is required",
            ),
            (
                json!({"questions": [{"question": "q", "options": [{"description": "d"}]}]}),
                "one-line `label`",
            ),
        ] {
            let err = Questions::read(&args).unwrap_err().to_string();
            assert!(err.contains(says), "{args}: {err}");
        }
    }

    #[test]
    fn answers_are_checked_against_the_options() {
        let q = asked();
        let chosen = |l: &[&str]| Reply::Chosen(l.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(
            q.accept(vec![chosen(&["star"]), chosen(&["lint", "test"])])
                .unwrap(),
            vec![chosen(&["STAR"]), chosen(&["lint", "test"])]
        );
        assert_eq!(
            q.accept(vec![chosen(&["bwa"])]).unwrap()[1],
            Reply::Unanswered,
            "a missing answer at the end is no answer"
        );
        assert!(matches!(
            q.accept(vec![chosen(&["hisat2"])]),
            Err(BadReply::UnknownLabel { number: 1, .. })
        ));
        assert!(matches!(
            q.accept(vec![chosen(&["bwa", "STAR"])]),
            Err(BadReply::SeveralLabels {
                number: 1,
                given: 2
            })
        ));
        assert!(matches!(
            q.accept(vec![Reply::Custom("minimap2".into())]),
            Err(BadReply::NoCustom { number: 1 })
        ));
        assert!(matches!(
            q.accept(vec![
                Reply::Unanswered,
                Reply::Unanswered,
                Reply::Unanswered
            ]),
            Err(BadReply::TooMany { given: 3, asked: 2 })
        ));
        let replies = q
            .accept(vec![chosen(&["bwa"]), Reply::Custom("only lint".into())])
            .unwrap();
        assert_eq!(
            q.answered(&replies),
            "question: the user answered\n1. Aligner: bwa\n2. Which checks?: (in their own words) only lint"
        );
    }
}
