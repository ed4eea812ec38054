//! A `question` event as `codaris run` and `codaris chat` show it, and the answers `run`
//! gives from its `--answer` flags: one flag per question, in the turn's order, a label as
//! its option spells it or `custom:TEXT` for an answer in the person's own words. With no
//! flag left a question goes back unanswered, and the model reads that nobody could answer.

use std::collections::VecDeque;

use codaris_proto::v1;
use serde_json::{Value, json};

/// The prefix of an `--answer` in the person's own words.
pub const CUSTOM_PREFIX: &str = "custom:";

/// The `--answer` flags not used yet.
#[derive(Debug, Default)]
pub struct Answers(VecDeque<String>);

impl Answers {
    pub fn new(flags: Vec<String>) -> Self {
        Answers(flags.into())
    }

    /// One answer per question of `question`, each from the next flag; empty (unanswered)
    /// once the flags run out.
    pub fn take_for(&mut self, question: &v1::Question) -> Vec<v1::QuestionAnswer> {
        question
            .questions
            .iter()
            .map(|item| match self.0.pop_front() {
                None => v1::QuestionAnswer::default(),
                Some(flag) => several(item, &flag).unwrap_or_else(|| parse(&flag)),
            })
            .collect()
    }
}

/// For a question that takes several options, a flag `a,b` naming two of its labels (and no
/// label itself, since a label may hold a comma): those labels.
fn several(item: &v1::QuestionItem, flag: &str) -> Option<v1::QuestionAnswer> {
    let is_label = |text: &str| {
        item.options
            .iter()
            .any(|o| o.label.eq_ignore_ascii_case(text.trim()))
    };
    if !item.multiple || !flag.contains(',') || is_label(flag) {
        return None;
    }
    let parts: Vec<&str> = flag.split(',').map(str::trim).collect();
    parts
        .iter()
        .all(|p| is_label(p))
        .then(|| v1::QuestionAnswer {
            labels: parts.into_iter().map(str::to_owned).collect(),
            custom: String::new(),
        })
}

/// One `--answer` flag (or a line typed at `chat`'s prompt, once read) as the wire answer.
pub fn parse(flag: &str) -> v1::QuestionAnswer {
    match flag.strip_prefix(CUSTOM_PREFIX) {
        Some(words) => v1::QuestionAnswer {
            labels: Vec::new(),
            custom: words.to_owned(),
        },
        None => v1::QuestionAnswer {
            labels: vec![flag.to_owned()],
            custom: String::new(),
        },
    }
}

/// A line typed at `chat`'s prompt for `item`: option numbers (`2`, or `1,3` where more than
/// one may be chosen), words of your own where the question takes them, or nothing (no
/// answer). `None`: the line fits neither, ask again.
pub fn read_choice(item: &v1::QuestionItem, line: &str) -> Option<v1::QuestionAnswer> {
    let line = line.trim();
    if line.is_empty() {
        return Some(v1::QuestionAnswer::default());
    }
    let numbers: Option<Vec<usize>> = line
        .split([',', ' '])
        .filter(|part| !part.is_empty())
        .map(|part| part.parse::<usize>().ok())
        .collect();
    match numbers {
        Some(numbers) => {
            if numbers.len() > 1 && !item.multiple {
                return None;
            }
            let mut labels = Vec::with_capacity(numbers.len());
            for n in numbers {
                let label = &item.options.get(n.checked_sub(1)?)?.label;
                if !labels.contains(label) {
                    labels.push(label.clone());
                }
            }
            Some(v1::QuestionAnswer {
                labels,
                custom: String::new(),
            })
        }
        None if item.custom => Some(v1::QuestionAnswer {
            labels: Vec::new(),
            custom: line.to_owned(),
        }),
        None => None,
    }
}

/// The event as a JSON line (never its secret) and as lines for people.
pub fn describe(question: &v1::Question) -> (Value, String) {
    let items: Vec<Value> = question
        .questions
        .iter()
        .map(|q| {
            json!({"header": q.header, "question": q.question, "multiple": q.multiple,
                   "custom": q.custom,
                   "options": q.options.iter().map(|o| json!({"label": o.label, "description": o.description})).collect::<Vec<_>>()})
        })
        .collect();
    let value = json!({"type": "question", "id": question.id,
                       "tool_call_id": question.tool_call_id, "questions": items});
    (value, lines(question))
}

/// The questions with their numbered options, for a person.
pub fn lines(question: &v1::Question) -> String {
    let mut out = String::new();
    for (i, q) in question.questions.iter().enumerate() {
        let title = if q.header.is_empty() {
            String::new()
        } else {
            format!("[{}] ", crate::output::shown(&q.header))
        };
        out.push_str(&format!(
            "? {}. {title}{}\n",
            i + 1,
            crate::output::shown(&q.question)
        ));
        for (n, option) in q.options.iter().enumerate() {
            let about = if option.description.is_empty() {
                String::new()
            } else {
                format!(" — {}", crate::output::shown(&option.description))
            };
            out.push_str(&format!(
                "    {}) {}{about}\n",
                n + 1,
                crate::output::shown(&option.label)
            ));
        }
        if q.custom {
            out.push_str("    or an answer in your own words\n");
        }
    }
    out.trim_end().to_owned()
}

/// The answers as `run --json` adds them to the event, and as one line for people.
pub fn answers_json(answers: &[v1::QuestionAnswer]) -> Value {
    json!(
        answers
            .iter()
            .map(|a| json!({"labels": a.labels, "custom": (!a.custom.is_empty()).then_some(&a.custom)}))
            .collect::<Vec<_>>()
    )
}

/// The answers for people: `bwa; (own words) only lint; (no answer)`.
pub fn answers_line(answers: &[v1::QuestionAnswer]) -> String {
    answers
        .iter()
        .map(|a| {
            if !a.custom.is_empty() {
                format!("(own words) {}", crate::output::shown(&a.custom))
            } else if a.labels.is_empty() {
                "(no answer)".to_owned()
            } else {
                crate::output::shown(&a.labels.join(", ")).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(n: usize) -> v1::Question {
        v1::Question {
            questions: vec![v1::QuestionItem::default(); n],
            ..Default::default()
        }
    }

    #[test]
    fn a_typed_line_is_numbers_or_words_of_your_own() {
        let option = |l: &str| v1::QuestionOption {
            label: l.to_owned(),
            description: String::new(),
        };
        let mut item = v1::QuestionItem {
            options: vec![option("bwa"), option("STAR")],
            ..Default::default()
        };
        assert_eq!(
            read_choice(&item, " 2 ").map(|a| a.labels),
            Some(vec!["STAR".to_owned()])
        );
        assert_eq!(read_choice(&item, "1,2"), None, "one option only");
        assert_eq!(read_choice(&item, "3"), None);
        assert_eq!(read_choice(&item, "0"), None);
        assert_eq!(read_choice(&item, "minimap2"), None, "no words of your own");
        assert_eq!(read_choice(&item, ""), Some(v1::QuestionAnswer::default()));
        item.multiple = true;
        item.custom = true;
        assert_eq!(
            read_choice(&item, "2, 1").map(|a| a.labels),
            Some(vec!["STAR".to_owned(), "bwa".to_owned()])
        );
        assert_eq!(
            read_choice(&item, "minimap2").map(|a| a.custom),
            Some("minimap2".to_owned())
        );
    }

    #[test]
    fn a_flag_names_several_labels_of_a_question_that_takes_several() {
        let option = |l: &str| v1::QuestionOption {
            label: l.to_owned(),
            description: String::new(),
        };
        let item = |multiple: bool| v1::QuestionItem {
            options: vec![option("lint"), option("test"), option("a, b")],
            multiple,
            ..Default::default()
        };
        let asked = |multiple: bool| v1::Question {
            questions: vec![item(multiple)],
            ..Default::default()
        };
        let take = |flag: &str, multiple: bool| {
            Answers::new(vec![flag.to_owned()]).take_for(&asked(multiple))[0]
                .labels
                .clone()
        };
        assert_eq!(take("lint, test", true), ["lint", "test"]);
        assert_eq!(
            take("a, b", true),
            ["a, b"],
            "a label with a comma is one label"
        );
        assert_eq!(
            take("lint,test", false),
            ["lint,test"],
            "one option only: as given"
        );
        assert_eq!(take("lint,nope", true), ["lint,nope"]);
    }

    #[test]
    fn flags_answer_the_questions_in_order_and_run_out() {
        let mut answers = Answers::new(vec!["bwa".into(), "custom:only lint".into()]);
        let first = answers.take_for(&asked(1));
        assert_eq!(first[0].labels, vec!["bwa"]);
        let rest = answers.take_for(&asked(2));
        assert_eq!(rest[0].custom, "only lint");
        assert!(rest[0].labels.is_empty());
        assert_eq!(
            rest[1],
            v1::QuestionAnswer::default(),
            "none left: unanswered"
        );
        assert_eq!(answers_line(&rest), "(own words) only lint; (no answer)");
    }
}
