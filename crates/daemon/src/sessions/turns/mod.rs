//! A session's turns: the live sessions and the turns they run (`live`), the one value that
//! owns a session (`session`), the daemon's side of a turn (`host`), permission cards
//! (`cards`, `card_text`), the turn's event log (`log`), `switch_model` (`switch`), `question`
//! (`questions`), resuming a session (`resume`) and undoing a turn (`undo`). Each file imports the file that defines what it uses, never this one.

mod card_text;
mod cards;
mod checkpoints;
mod children;
mod family;
mod host;
mod live;
mod log;
mod memory;
mod model;
mod questions;
mod resume;
mod services;
mod session;
mod survivors;
mod switch;
mod undo;

pub use crate::error::NotRecorded;
pub use cards::{Cards, Delivery};
pub use checkpoints::checkpoints_dir;
pub use live::*;
pub(crate) use model::model_named;
pub use resume::{HistoryEntry, SessionChange};
pub use services::Services;
pub use session::Session;
pub use undo::Undone;
