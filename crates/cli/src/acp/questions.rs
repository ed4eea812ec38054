//! The model's `question` asked of the person at the editor: as one form (`elicitation/create`)
//! where the editor advertised forms, else one `session/request_permission` per question with
//! an option per label. The labels chosen go back to the daemon through AnswerQuestion with
//! the event's secret; a dismissed form or request answers that nobody could answer, which
//! the model reads and works around.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationContentValue, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, EnumOption, MultiSelectPropertySchema,
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    StringPropertySchema, ToolCallId, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{Client, Error};
use codaris_proto::v1;
use tokio::sync::oneshot;

use super::adapter::Adapter;

/// The permission option that leaves a question unanswered.
const SKIP: &str = "skip";

/// Asks the editor the question in a task of its own (the turn's events keep flowing, and the
/// daemon may time the question out meanwhile). Dropping the returned sender withdraws what
/// the editor is still being asked.
pub fn ask(
    adapter: &Arc<Adapter>,
    cx: &ConnectionTo<Client>,
    session: &str,
    question: v1::Question,
) -> Result<oneshot::Sender<()>, Error> {
    let (withdraw, mut withdrawn) = oneshot::channel();
    let adapter = Arc::clone(adapter);
    let cx2 = cx.clone();
    let session = session.to_owned();
    cx.spawn(async move {
        let asked = if adapter.traits().forms {
            by_form(&cx2, &session, &question, &mut withdrawn).await
        } else {
            by_permission(&cx2, &session, &question, &mut withdrawn).await
        };
        // Withdrawn: the daemon moved on (the question lapsed or the turn ended).
        let Some(answers) = asked else {
            return Ok(());
        };
        let reply = match adapter.sessions() {
            Ok(mut sessions) => sessions
                .answer_question(v1::AnswerQuestionRequest {
                    session_id: session.clone(),
                    question_id: question.id.clone(),
                    answer_secret: question.answer_secret.clone(),
                    answers,
                })
                .await
                .map(|_| ()),
            Err(_) => Ok(()),
        };
        if let Err(status) = reply {
            eprintln!(
                "codaris acp: the answer to question `{}` was not taken: {}",
                question.id,
                status.message()
            );
        }
        Ok(())
    })?;
    Ok(withdraw)
}

/// Sends `request` to the editor and waits for its answer; `None` once the question is
/// withdrawn, the editor's request then withdrawn too (`$/cancel_request`).
async fn ask_editor<R>(
    cx: &ConnectionTo<Client>,
    request: R,
    withdrawn: &mut oneshot::Receiver<()>,
) -> Option<Result<R::Response, Error>>
where
    R: agent_client_protocol::JsonRpcRequest,
{
    let sent = cx.send_request(request);
    let handle = sent.cancellation_handle();
    tokio::select! {
        answer = sent.block_task() => Some(answer),
        _ = withdrawn => {
            let _ = handle.cancel();
            None
        }
    }
}

/// Each question as one permission request, an option per label (`allow_once`, the only kind
/// that reads as a choice) and `Skip`. A permission request picks one option: a question that
/// takes several labels gets the one chosen, and one that takes words of the person's own
/// cannot have them here. The person's answers, one per question in order (an empty one
/// where nobody answered); `None` once withdrawn.
async fn by_permission(
    cx: &ConnectionTo<Client>,
    session: &str,
    question: &v1::Question,
    withdrawn: &mut oneshot::Receiver<()>,
) -> Option<Vec<v1::QuestionAnswer>> {
    let mut answers = Vec::new();
    for item in &question.questions {
        let mut options: Vec<PermissionOption> = item
            .options
            .iter()
            .enumerate()
            .map(|(n, option)| {
                PermissionOption::new(
                    option_id(n),
                    option.label.clone(),
                    PermissionOptionKind::AllowOnce,
                )
            })
            .collect();
        options.push(PermissionOption::new(
            SKIP,
            "Skip",
            PermissionOptionKind::RejectOnce,
        ));
        let title = if item.header.is_empty() {
            item.question.clone()
        } else {
            format!("{}: {}", item.header, item.question)
        };
        let request = RequestPermissionRequest::new(
            session.to_owned(),
            ToolCallUpdate::new(
                question.tool_call_id.clone(),
                ToolCallUpdateFields::new().title(title),
            ),
            options,
        );
        let asked = ask_editor(cx, request, withdrawn).await?;
        let chosen = match asked.map(|response| response.outcome) {
            // `Skip`, and any id the request did not offer, choose nothing.
            Ok(RequestPermissionOutcome::Selected(selected)) => item
                .options
                .iter()
                .enumerate()
                .find(|(n, _)| *selected.option_id.0 == *option_id(*n))
                .map(|(_, option)| option.label.clone()),
            // Dismissed, or the editor is gone: the questions left are not asked.
            _ => break,
        };
        answers.push(v1::QuestionAnswer {
            labels: chosen.into_iter().collect(),
            custom: String::new(),
        });
    }
    Some(answers)
}

fn option_id(n: usize) -> String {
    format!("option-{n}")
}

/// The form's field for question `n`, and for its answer in the person's own words.
fn field(n: usize) -> String {
    format!("q{n:02}")
}

fn own_words_field(n: usize) -> String {
    format!("q{n:02}_own_words")
}

/// All the questions as one form: a single choice as a string of one of the labels, several
/// as a multi-select, and a text field beside where the question takes the person's own
/// words. None is required: a question left empty is one nobody answered.
pub fn form(question: &v1::Question) -> ElicitationSchema {
    let mut schema = ElicitationSchema::new();
    for (n, item) in question.questions.iter().enumerate() {
        let options: Vec<EnumOption> = item
            .options
            .iter()
            .map(|option| {
                EnumOption::new(option.label.clone(), option.label.clone()).description(
                    (!option.description.is_empty()).then(|| option.description.clone()),
                )
            })
            .collect();
        let title = (!item.header.is_empty()).then(|| item.header.clone());
        schema = if item.multiple {
            schema.property(
                field(n),
                MultiSelectPropertySchema::titled(options)
                    .title(title.clone())
                    .description(item.question.clone()),
                false,
            )
        } else {
            schema.property(
                field(n),
                StringPropertySchema::new()
                    .one_of(options)
                    .title(title.clone())
                    .description(item.question.clone()),
                false,
            )
        };
        if item.custom {
            schema = schema.property(
                own_words_field(n),
                StringPropertySchema::new()
                    .title("Or in your own words".to_owned())
                    .description(item.question.clone()),
                false,
            );
        }
    }
    schema
}

/// The person's answers from one form; none (nobody answered) when declined or dismissed;
/// `None` once withdrawn.
async fn by_form(
    cx: &ConnectionTo<Client>,
    session: &str,
    question: &v1::Question,
    withdrawn: &mut oneshot::Receiver<()>,
) -> Option<Vec<v1::QuestionAnswer>> {
    let scope = ElicitationSessionScope::new(session.to_owned())
        .tool_call_id(ToolCallId::new(question.tool_call_id.clone()));
    let request = CreateElicitationRequest::new(
        ElicitationFormMode::new(scope, form(question)),
        "The agent asks",
    );
    Some(match ask_editor(cx, request, withdrawn).await? {
        Ok(response) => match response.action {
            ElicitationAction::Accept(accepted) => {
                form_answers(question, &accepted.content.unwrap_or_default())
            }
            _ => Vec::new(),
        },
        Err(_) => Vec::new(),
    })
}

/// The form's content as the daemon's answers: only labels the question offers are kept (the
/// editor's word is not trusted to name one), and words of the person's own only where the
/// question takes them (in place of its labels).
pub fn form_answers(
    question: &v1::Question,
    content: &BTreeMap<String, ElicitationContentValue>,
) -> Vec<v1::QuestionAnswer> {
    question
        .questions
        .iter()
        .enumerate()
        .map(|(n, item)| {
            let given: Vec<&str> = match content.get(&field(n)) {
                Some(ElicitationContentValue::String(label)) => vec![label.as_str()],
                Some(ElicitationContentValue::StringArray(labels)) => {
                    labels.iter().map(String::as_str).collect()
                }
                _ => Vec::new(),
            };
            let mut labels: Vec<String> = item
                .options
                .iter()
                .filter(|option| given.contains(&option.label.as_str()))
                .map(|option| option.label.clone())
                .collect();
            if !item.multiple {
                labels.truncate(1);
            }
            let custom: String = match content.get(&own_words_field(n)) {
                Some(ElicitationContentValue::String(words)) if item.custom => words
                    .chars()
                    .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
                    .collect::<String>()
                    .trim()
                    .to_owned(),
                _ => String::new(),
            };
            // The daemon takes labels or words, not both: words typed are the person's
            // deliberate answer.
            if !custom.is_empty() {
                labels.clear();
            }
            v1::QuestionAnswer { labels, custom }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn question() -> v1::Question {
        let option = |label: &str| v1::QuestionOption {
            label: label.to_owned(),
            description: String::new(),
        };
        v1::Question {
            id: "q".to_owned(),
            tool_call_id: "call".to_owned(),
            answer_secret: "s".to_owned(),
            questions: vec![
                v1::QuestionItem {
                    header: "Aligner".to_owned(),
                    question: "Which aligner?".to_owned(),
                    options: vec![option("bwa"), option("STAR")],
                    multiple: false,
                    custom: false,
                },
                v1::QuestionItem {
                    header: String::new(),
                    question: "Which checks?".to_owned(),
                    options: vec![option("lint"), option("test")],
                    multiple: true,
                    custom: true,
                },
            ],
        }
    }

    #[test]
    fn the_form_has_a_choice_per_question_and_a_text_field_where_words_are_taken() {
        let schema = serde_json::to_value(form(&question())).unwrap();
        let fields = &schema["properties"];
        assert_eq!(fields["q00"]["type"], "string");
        assert_eq!(fields["q00"]["oneOf"][1]["const"], "STAR");
        assert_eq!(fields["q01"]["type"], "array");
        assert_eq!(fields["q01_own_words"]["type"], "string");
        assert!(fields.get("q00_own_words").is_none());
        assert_eq!(
            schema.get("required"),
            None,
            "an empty field is nobody's answer"
        );
    }

    #[test]
    fn only_offered_labels_and_allowed_words_reach_the_daemon() {
        let content: BTreeMap<String, ElicitationContentValue> = serde_json::from_value(json!({
            "q00": "../etc",
            "q00_own_words": "sneaked in",
            "q01": ["test", "deploy", "lint"],
            "q01_own_words": " only lint ",
        }))
        .unwrap();
        let answers = form_answers(&question(), &content);
        assert_eq!(answers[0].labels, Vec::<String>::new());
        assert_eq!(answers[0].custom, "");
        assert_eq!(answers[1].labels, Vec::<String>::new());
        assert_eq!(answers[1].custom, "only lint");
        let chosen: BTreeMap<String, ElicitationContentValue> =
            serde_json::from_value(json!({"q00": "STAR", "q01": ["test", "deploy", "lint"]}))
                .unwrap();
        let answers = form_answers(&question(), &chosen);
        assert_eq!(answers[0].labels, vec!["STAR"]);
        assert_eq!(answers[1].labels, vec!["lint", "test"]);
    }
}
