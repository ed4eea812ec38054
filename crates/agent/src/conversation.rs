//! A session's conversation: one list of [`Event`]s in the order they happened, carried from
//! turn to turn. Everything else is read from it: the surface reads the events themselves, the
//! provider is sent [`Conversation::messages`], and the daemon stores the conversation in the
//! form it has always had (a `history` list beside a `messages` list), so a store written by an
//! older daemon reads back, and an older daemon reads a newer store, byte for byte.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::context::budget::ContextBudget;
use crate::context::evict::{self, Evicted, Stubs};
use crate::history::{Compaction, Event};
use crate::provider::{Message, ToolCall, ToolResult};

/// The most pictures a request carries. Each can be megabytes and every later round sends the
/// whole conversation again, so older pictures give way to newer ones (providers also cap a
/// request's size and its number of images).
pub const MAX_PICTURES_SENT: usize = 4;

/// A session's conversation (stored by the daemon after each turn, so a restored session
/// continues it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    log: Vec<Event>,
    /// Turns started so far.
    pub turns: u32,
    /// Notes for the model that arrived between turns (a background command finished); they
    /// ride along with the next message and never count as what the person typed.
    pub notes: Vec<String>,
    /// The results replaced by a stub in what is sent (by call id). Part of the state, so every
    /// later round sends the same prefix until the next batch.
    evicted: Stubs,
}

impl Conversation {
    /// Every event, oldest first.
    pub fn events(&self) -> &[Event] {
        &self.log
    }

    /// What the model is sent: the person's messages (with their notes), the model's answers
    /// and the results of the calls the loop took up.
    pub fn messages(&self) -> Vec<Message> {
        self.log.iter().filter_map(message_of).collect()
    }

    /// What the model is sent: from the last compaction on (its summary first), the evicted
    /// results as their stubs.
    pub fn sent_messages(&self) -> Vec<Message> {
        let sent = &self.log[self.sent_from()..];
        let mut messages = Vec::with_capacity(sent.len());
        let mut summary: Option<String> = None;
        for event in sent {
            let message = match event {
                Event::Compaction(compaction) => {
                    summary = Some(compaction.message());
                    continue;
                }
                Event::ToolResult {
                    id,
                    is_error,
                    bound,
                    ..
                } if self.evicted.contains_key(id) => Message::ToolResult(ToolResult {
                    call_id: id.clone(),
                    content: self.evicted.get(id).cloned().unwrap_or_default(),
                    is_error: *is_error,
                    binds: bound.clone(),
                    pictures: Vec::new(),
                }),
                other => match message_of(other) {
                    Some(message) => message,
                    None => continue,
                },
            };
            // The summary opens the person's message that follows it, or stands alone.
            let message = match (summary.take(), message) {
                (Some(summary), Message::User { text }) => {
                    Message::user(format!("{summary}\n\n{text}"))
                }
                (Some(summary), message) => {
                    messages.push(Message::user(summary));
                    message
                }
                (None, message) => message,
            };
            messages.push(message);
        }
        if let Some(summary) = summary {
            messages.push(Message::user(summary));
        }
        messages
    }

    /// Where what is sent starts: the last compaction, or the beginning.
    pub fn sent_from(&self) -> usize {
        self.log
            .iter()
            .rposition(|event| matches!(event, Event::Compaction(_)))
            .unwrap_or(0)
    }

    /// Where the current turn starts: its message (the beginning before any).
    pub fn turn_start(&self) -> usize {
        self.log
            .iter()
            .rposition(|event| matches!(event, Event::User { .. }))
            .unwrap_or(0)
    }

    /// The results evicted so far, each with its stub.
    pub fn evicted(&self) -> &Stubs {
        &self.evicted
    }

    /// A conversation of `events` (a test's or a benchmark's), nothing evicted.
    pub fn from_events(events: Vec<Event>) -> Self {
        Self {
            log: events,
            ..Self::default()
        }
    }

    /// The round's eviction batch: when the next request (`fixed` tokens of system prompt and
    /// tools, and the messages sent) would pass `evict_at` of the budget's room, the oldest
    /// results before the current turn that are not marked to keep are evicted down to
    /// `evict_to`. Returns the batch, or `None` when nothing was evicted; either way the
    /// request's estimate afterwards.
    pub fn evict_for(&mut self, budget: &ContextBudget, fixed: u64) -> (Option<Evicted>, u64) {
        let from = self.sent_from();
        // A turn whose message was folded has only its own events left: none may go.
        let current = self.turn_start().saturating_sub(from);
        evict::evict(&self.log[from..], current, &mut self.evicted, fixed, budget)
    }

    /// Folds everything before `at` into `compaction`: it is recorded there, and what is sent
    /// starts from it.
    pub(crate) fn fold(&mut self, at: usize, compaction: Compaction) {
        let at = at.min(self.log.len());
        self.log.insert(at, Event::Compaction(Box::new(compaction)));
    }

    /// Adds `notes` to what the next request sends, without a message of their own (a
    /// request must alternate as the providers require): to the turn's message when nothing
    /// followed it yet, else to the last call's result, which the next request carries. With
    /// neither (no turn yet), they wait for the next message.
    pub fn note_now(&mut self, notes: Vec<String>) {
        if notes.is_empty() {
            return;
        }
        match self.log.last_mut() {
            Some(Event::User { notes: own, .. }) => own.extend(notes),
            Some(Event::ToolResult { output, .. }) => {
                for note in notes {
                    output.push_str("\n\n");
                    output.push_str(&note);
                }
            }
            _ => self.notes.extend(notes),
        }
    }

    /// Records an event.
    pub(crate) fn push(&mut self, event: Event) {
        self.log.push(event);
    }

    /// Records a call's result. With pictures, older pictures are retired first so the model is
    /// never sent more than [`MAX_PICTURES_SENT`].
    pub(crate) fn push_result(&mut self, result: Event) {
        if let Event::ToolResult { pictures, .. } = &result
            && !pictures.is_empty()
        {
            let keep = MAX_PICTURES_SENT - pictures.len().min(MAX_PICTURES_SENT);
            retire_old_pictures(&mut self.log, keep);
        }
        self.log.push(result);
    }
}

/// The provider's view of one event; a call taken up has none (its answer holds it).
fn message_of(event: &Event) -> Option<Message> {
    Some(match event {
        Event::User { text, notes } => Message::user(sent_text(text, notes)),
        Event::Assistant { text, calls } => Message::Assistant {
            text: text.clone(),
            tool_calls: calls.clone(),
        },
        Event::ToolCall { .. } | Event::Compaction(_) => return None,
        Event::ToolResult {
            id,
            output,
            bound,
            is_error,
            pictures,
            retired,
            ..
        } => Message::ToolResult(ToolResult {
            call_id: id.clone(),
            content: format!("{output}{retired}"),
            is_error: *is_error,
            binds: bound.clone(),
            pictures: pictures.clone(),
        }),
    })
}

/// A message as sent: what was typed, then the notes on lines of their own.
fn sent_text(text: &str, notes: &[String]) -> String {
    if notes.is_empty() {
        text.to_owned()
    } else {
        format!("{text}\n\n{}", notes.join("\n"))
    }
}

/// Keeps at most `keep` pictures in the log, the newest; an older one leaves a line in its
/// result so the model knows to read the file again to see it.
fn retire_old_pictures(log: &mut [Event], keep: usize) {
    let mut seen = 0;
    for event in log.iter_mut().rev() {
        let Event::ToolResult {
            pictures, retired, ..
        } = event
        else {
            continue;
        };
        if pictures.is_empty() {
            continue;
        }
        let room = keep.saturating_sub(seen);
        seen += pictures.len();
        if pictures.len() > room {
            let dropped = pictures.len() - room;
            pictures.truncate(room);
            retired.push_str(&format!(
                "\n[{dropped} picture(s) of this result are no longer shown, to make room for newer ones; read the file again to see it]"
            ));
        }
    }
}

/// The stored form: the surface's list and the provider's list side by side, as every daemon
/// has written it. The field order is the order of the bytes.
#[derive(Serialize, Deserialize)]
struct Stored<H, N> {
    history: Vec<H>,
    messages: Vec<Message>,
    turns: u32,
    notes: N,
    /// Absent until a result is evicted, so an older store's bytes are unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    evicted: Vec<String>,
}

/// One entry of the stored `history` list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StoredEvent {
    User {
        text: String,
    },
    Assistant {
        text: String,
    },
    ToolCall {
        id: String,
        tool: String,
        args: Value,
    },
    ToolResult {
        id: String,
        tool: String,
        output: String,
        #[serde(default)]
        bound: Vec<String>,
        #[serde(default)]
        is_error: bool,
    },
    /// A compaction, where it happened.
    Compaction(Box<Compaction>),
}

impl Serialize for Conversation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Stored {
            history: stored_history(&self.log),
            messages: self.messages(),
            turns: self.turns,
            notes: &self.notes,
            evicted: self.evicted.keys().cloned().collect(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = Stored::<StoredEvent, Vec<String>>::deserialize(deserializer)?;
        let log = from_stored(stored.history, stored.messages);
        let evicted = evict::stubs_of(&log, stored.evicted);
        Ok(Conversation {
            log,
            turns: stored.turns,
            notes: stored.notes,
            evicted,
        })
    }
}

/// The stored `history`: what was typed, the model's non-empty texts, each call taken up (its
/// name and arguments read from the answer it came in) and each result as the tool gave it.
fn stored_history(log: &[Event]) -> Vec<StoredEvent> {
    let mut history = Vec::with_capacity(log.len());
    let mut answer: &[ToolCall] = &[];
    for event in log {
        match event {
            Event::User { text, .. } => history.push(StoredEvent::User { text: text.clone() }),
            Event::Assistant { text, calls } => {
                answer = calls;
                if !text.is_empty() {
                    history.push(StoredEvent::Assistant { text: text.clone() });
                }
            }
            Event::ToolCall { id } => {
                // Calls are taken up in order, so the next one of this id is the one.
                let at = answer.iter().position(|call| call.id == *id);
                let (tool, args) = match at {
                    Some(at) => {
                        let call = &answer[at];
                        answer = &answer[at + 1..];
                        (call.name.clone(), call.arguments.clone())
                    }
                    None => (String::new(), Value::Null),
                };
                history.push(StoredEvent::ToolCall {
                    id: id.clone(),
                    tool,
                    args,
                });
            }
            Event::ToolResult {
                id,
                tool,
                output,
                bound,
                is_error,
                ..
            } => history.push(StoredEvent::ToolResult {
                id: id.clone(),
                tool: tool.clone(),
                output: output.clone(),
                bound: bound.clone(),
                is_error: *is_error,
            }),
            Event::Compaction(compaction) => {
                history.push(StoredEvent::Compaction(compaction.clone()))
            }
        }
    }
    history
}

/// The log from the two stored lists, walked side by side: the messages give the order and
/// what the model was sent; the history gives what was typed, which calls were taken up, and
/// each result's tool and unretired text. A store edited by hand that does not line up still
/// reads: what the history lacks is taken from the message.
fn from_stored(history: Vec<StoredEvent>, messages: Vec<Message>) -> Vec<Event> {
    let mut log = Vec::with_capacity(history.len() + messages.len());
    let mut events = history.into_iter().peekable();
    let taken_up = |events: &mut std::iter::Peekable<std::vec::IntoIter<StoredEvent>>,
                    log: &mut Vec<Event>| {
        while let Some(StoredEvent::ToolCall { id, .. }) =
            events.next_if(|e| matches!(e, StoredEvent::ToolCall { .. }))
        {
            log.push(Event::ToolCall { id });
        }
    };
    // A compaction sits between messages: before the next one, or at the end.
    let compactions = |events: &mut std::iter::Peekable<std::vec::IntoIter<StoredEvent>>,
                       log: &mut Vec<Event>| {
        while let Some(StoredEvent::Compaction(compaction)) =
            events.next_if(|e| matches!(e, StoredEvent::Compaction(_)))
        {
            log.push(Event::Compaction(compaction));
        }
    };
    for message in messages {
        compactions(&mut events, &mut log);
        match message {
            Message::User { text: sent } => {
                // The calls of the last answer taken up and never answered: its turn ended
                // (a turn that ends so is the last of its answers).
                taken_up(&mut events, &mut log);
                compactions(&mut events, &mut log);
                let typed = match events.next_if(|e| matches!(e, StoredEvent::User { .. })) {
                    Some(StoredEvent::User { text }) => text,
                    _ => sent.clone(),
                };
                log.push(user_of(typed, &sent));
            }
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    events.next_if(|e| matches!(e, StoredEvent::Assistant { .. }));
                }
                log.push(Event::Assistant {
                    text,
                    calls: tool_calls,
                });
            }
            Message::ToolResult(result) => {
                // The calls taken up up to this one.
                taken_up(&mut events, &mut log);
                let told = events.next_if(|e| matches!(e, StoredEvent::ToolResult { .. }));
                log.push(result_of(told, result));
            }
        }
    }
    taken_up(&mut events, &mut log);
    compactions(&mut events, &mut log);
    log
}

/// A user event from what was typed and what was sent: the notes are what follows the typed
/// text and a blank line.
fn user_of(typed: String, sent: &str) -> Event {
    if typed == sent {
        return Event::user(typed);
    }
    match sent
        .strip_prefix(typed.as_str())
        .and_then(|rest| rest.strip_prefix("\n\n"))
    {
        // The notes were joined with newlines, so splitting at them gives back the same text.
        Some(notes) => Event::User {
            notes: notes.split('\n').map(str::to_owned).collect(),
            text: typed,
        },
        None => Event::user(sent),
    }
}

/// A result event from the history's entry (when there is one) and the message the model was
/// sent: what the message has beyond the tool's own output are its retired-picture lines.
fn result_of(told: Option<StoredEvent>, result: ToolResult) -> Event {
    let ToolResult {
        call_id,
        content,
        is_error,
        binds,
        pictures,
    } = result;
    let (tool, output, bound) = match told {
        Some(StoredEvent::ToolResult {
            tool,
            output,
            bound,
            ..
        }) if content.starts_with(output.as_str()) => (tool, output, bound),
        Some(StoredEvent::ToolResult { tool, bound, .. }) => (tool, content.clone(), bound),
        _ => (String::new(), content.clone(), binds),
    };
    let retired = content[output.len()..].to_owned();
    Event::ToolResult {
        id: call_id,
        tool,
        output,
        bound,
        is_error,
        pictures,
        retired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Picture;

    fn result(id: &str, pictures: usize) -> Event {
        Event::ToolResult {
            id: id.to_owned(),
            tool: "read_file".to_owned(),
            output: format!("result {id}"),
            bound: Vec::new(),
            is_error: false,
            pictures: (0..pictures)
                .map(|n| Picture::from_bytes("image/png", &[n as u8]))
                .collect(),
            retired: String::new(),
        }
    }

    fn shown(conversation: &Conversation) -> Vec<(String, usize)> {
        conversation
            .messages()
            .into_iter()
            .filter_map(|m| match m {
                Message::ToolResult(r) => Some((r.call_id, r.pictures.len())),
                _ => None,
            })
            .collect()
    }

    fn content(conversation: &Conversation, at: usize) -> String {
        match &conversation.messages()[at] {
            Message::ToolResult(r) => r.content.clone(),
            other => panic!("expected a tool result at {at}, got {other:?}"),
        }
    }

    #[test]
    fn only_the_newest_pictures_stay_and_the_older_ones_say_so() {
        let mut conversation = Conversation::default();
        for event in [
            result("a", 1),
            Event::user("look"),
            result("b", 2),
            result("c", 0),
        ] {
            conversation.push(event);
        }
        // Three more make six: the oldest give way, one of `b`'s two among them.
        conversation.push_result(result("d", 3));
        assert_eq!(
            shown(&conversation),
            [
                ("a".to_owned(), 0),
                ("b".to_owned(), 1),
                ("c".to_owned(), 0),
                ("d".to_owned(), 3)
            ]
        );
        assert!(
            content(&conversation, 0).contains("no longer shown"),
            "{}",
            content(&conversation, 0)
        );
        assert_eq!(
            content(&conversation, 3),
            "result c",
            "a result without pictures is untouched"
        );
        // The tool's own output is kept apart from what was added to it.
        let Event::ToolResult { output, .. } = &conversation.events()[0] else {
            panic!("expected a tool result first");
        };
        assert_eq!(output, "result a");
        // Retiring again changes nothing that is already retired.
        let before = conversation.clone();
        retire_old_pictures(&mut conversation.log, MAX_PICTURES_SENT);
        assert_eq!(conversation, before);
    }

    /// What arrives mid-turn rides with the next request in place: on the turn's message
    /// before any answer, then on the last result, never as a message of its own.
    #[test]
    fn a_note_now_joins_the_message_or_the_last_result_it_follows() {
        let mut conversation = Conversation::default();
        conversation.note_now(vec!["[memory: early]".to_owned()]);
        assert_eq!(conversation.notes, ["[memory: early]"]);
        let early = std::mem::take(&mut conversation.notes);
        conversation.push(Event::User {
            text: "go".to_owned(),
            notes: early,
        });
        conversation.note_now(vec!["[memory: first]".to_owned()]);
        conversation.note_now(Vec::new());
        conversation.push(Event::Assistant {
            text: String::new(),
            calls: Vec::new(),
        });
        conversation.push_result(result("a", 0));
        conversation.note_now(vec!["[memory: later]".to_owned()]);
        let sent = conversation.sent_messages();
        assert_eq!(sent.len(), 3, "{sent:?}");
        assert_eq!(
            sent[0],
            Message::user("go\n\n[memory: early]\n[memory: first]")
        );
        let Message::ToolResult(last) = &sent[2] else {
            panic!("expected the result last: {sent:?}");
        };
        assert_eq!(last.content, "result a\n\n[memory: later]");
    }

    #[test]
    fn a_message_with_notes_splits_back_into_what_was_typed_and_the_notes() {
        for notes in [vec![], vec![""], vec!["one"], vec!["one\ntwo", "three"]] {
            let notes: Vec<String> = notes.into_iter().map(str::to_owned).collect();
            let sent = sent_text("typed", &notes);
            let back = user_of("typed".to_owned(), &sent);
            let Event::User { text, notes: read } = &back else {
                panic!("expected a user event, got {back:?}");
            };
            assert_eq!(text, "typed");
            assert_eq!(sent_text(text, read), sent, "{notes:?}");
        }
        // A store whose lists disagree reads what the model was sent.
        assert_eq!(
            user_of("typed".to_owned(), "something else"),
            Event::user("something else")
        );
    }
}
