//! The records kept beside the decisions, each of something a person (or an operator) did: an
//! undo of a turn, a change of the configuration file, an approval of a scheduled project job.
//! Each is appended durably under an id of its own and read back by session.

use super::Pending;
use crate::chain::RecordKind;
use crate::error::{Corrupt, LedgerError};

use super::Ledger;

impl Ledger {
    /// Records an undo of a turn, durably, under a new id (`u…`), which it returns: the undo
    /// is acted on only once its record is on the device.
    pub fn append_undo(&self, record: &crate::undo::UndoRecord) -> Result<String, LedgerError> {
        let id = format!("u{:012}", self.next_id()?);
        let record = crate::undo::UndoRecord {
            id: id.clone(),
            ..record.clone()
        };
        self.commit(Pending::new(
            RecordKind::Undo,
            id.as_bytes(),
            id.clone(),
            &record,
        )?)?;
        Ok(id)
    }

    /// Records the operator's approval of a scheduled project job, durably, under a new id
    /// (`j…`), which it returns: the job runs only once its approval is on the device.
    pub fn append_job_approval(
        &self,
        record: &crate::job_approval::JobApprovalRecord,
    ) -> Result<String, LedgerError> {
        let id = format!("j{:012}", self.next_id()?);
        let record = crate::job_approval::JobApprovalRecord {
            id: id.clone(),
            ..record.clone()
        };
        self.commit(Pending::new(
            RecordKind::JobApproval,
            id.as_bytes(),
            id.clone(),
            &record,
        )?)?;
        Ok(id)
    }

    /// Job approvals oldest first (ids grow), of one session when given.
    pub fn job_approvals(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<crate::job_approval::JobApprovalRecord>, Vec<Corrupt>), LedgerError> {
        self.scan_session(&self.job_approvals, "job_approvals", session_id)
    }

    /// Records a change of the configuration file, durably, under a new id (`c…`), which it
    /// returns: the change is put in force only once its record is on the device.
    pub fn append_config_change(
        &self,
        record: &crate::config_change::ConfigChangeRecord,
    ) -> Result<String, LedgerError> {
        let id = format!("c{:012}", self.next_id()?);
        let record = crate::config_change::ConfigChangeRecord {
            id: id.clone(),
            ..record.clone()
        };
        self.commit(Pending::new(
            RecordKind::ConfigChange,
            id.as_bytes(),
            id.clone(),
            &record,
        )?)?;
        Ok(id)
    }

    /// Changes of the configuration file, oldest first (ids grow), of one session when given.
    pub fn config_changes(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<crate::config_change::ConfigChangeRecord>, Vec<Corrupt>), LedgerError> {
        self.scan_session(&self.config_changes, "config_changes", session_id)
    }

    /// Undos oldest first (ids grow), of one session when given.
    pub fn undos(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<crate::undo::UndoRecord>, Vec<Corrupt>), LedgerError> {
        self.scan_session(&self.undos, "undos", session_id)
    }
}
