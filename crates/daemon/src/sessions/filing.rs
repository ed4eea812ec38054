//! `session_describe`'s store: the title and tags in the session records.

use codaris_tools::filing::{Change, Filing, FilingError, FilingStore};

use crate::error::DaemonError;
use crate::sessions::store::{SessionRecord, SessionStore};

/// The session records as `session_describe` files them.
#[derive(Debug, Clone)]
pub struct RecordFiling(pub SessionStore);

fn filing_of(record: &SessionRecord) -> Filing {
    Filing {
        title: record.title.clone(),
        tags: record.tags.clone(),
    }
}

fn refused(err: DaemonError) -> FilingError {
    match err {
        DaemonError::SessionEnded { id } => FilingError::Ended { session: id },
        other => FilingError::Store {
            reason: other.to_string(),
        },
    }
}

impl FilingStore for RecordFiling {
    fn read(&self, session: &str) -> Result<Filing, FilingError> {
        self.0
            .get(session)
            .map(|record| filing_of(&record))
            .map_err(refused)
    }

    fn change(&self, session: &str, change: &Change<'_>) -> Result<(Filing, bool), FilingError> {
        self.0
            .refile(session, change)
            .map(|(record, changed)| (filing_of(&record), changed))
            .map_err(refused)
    }
}
