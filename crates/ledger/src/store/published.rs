//! Publishing the chain's head outside the state directory, and checking a chain against the
//! head that was published (see `head.rs` for why).

use std::path::Path;

use super::Ledger;
use crate::chain::{ChainFinding, Tail};
use crate::error::LedgerError;
use crate::head::{ChainHead, ChainKey, HeadPublisher};

impl Ledger {
    /// From now on, publishes the chain's head into `dir` (signed with `key`) whenever the
    /// journal is folded, and publishes it now; returns the head written. A second call keeps
    /// the first directory and key.
    pub fn publish_head_to(&self, dir: &Path, key: ChainKey) -> Result<ChainHead, LedgerError> {
        let publisher = self.head.get_or_init(|| HeadPublisher {
            dir: dir.to_path_buf(),
            key,
        });
        let tail = self.appender().tail.clone();
        publisher.publish(&tail)
    }

    /// Publishes the chain's end now (`None` when no directory was given): every link up to it
    /// is durable (in the journal if not yet folded), so the head never names a link a crash
    /// could take back.
    pub fn publish_head(&self) -> Result<Option<ChainHead>, LedgerError> {
        let Some(publisher) = self.head.get() else {
            return Ok(None);
        };
        let tail = self.appender().tail.clone();
        publisher.publish(&tail).map(Some)
    }

    /// The same as [`Ledger::publish_head`], for the fold, which holds the appender: a head
    /// that cannot be written there is written at the next fold or stop.
    pub(super) fn publish_head_at(&self, tail: &Tail) {
        if let Some(publisher) = self.head.get() {
            let _ = publisher.publish(tail);
        }
    }

    /// What the chain's end says against `head`: links cut off after it, a rewritten chain, a
    /// head forged without `key` (see [`ChainHead::check`]). Reads the chain file backwards
    /// from its end to the head's link.
    pub fn check_head(
        &self,
        head: &ChainHead,
        key: Option<&ChainKey>,
    ) -> Result<Vec<ChainFinding>, LedgerError> {
        let mut last = None;
        let mut hash_at = None;
        self.chain().newest(|stored| match stored.decode() {
            Ok(link) => {
                if last.is_none() {
                    last = Some((link.seq, link.hash.clone()));
                }
                if link.seq == head.seq {
                    hash_at = Some(link.hash);
                }
                link.seq > head.seq
            }
            // An unreadable link is reported by the chain's own walk; read on past it.
            Err(_) => true,
        })?;
        Ok(head.check(
            key,
            last.as_ref().map(|(seq, hash)| (*seq, hash.as_str())),
            hash_at.as_deref(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use codaris_policy::{Request, Task};

    use crate::{ChainHead, ChainKey, ChainProblem, DecisionRecord, Ledger};

    fn decision(n: u64) -> DecisionRecord {
        let request = Request {
            tool: codaris_policy::ToolId::parse("read_file"),
            args: serde_json::json!({"path": format!("{n}.txt")}),
            task: Task::new("/w/proj"),
            grants: Vec::new(),
            spec: None,
        };
        let decision = request.evaluate();
        DecisionRecord::new("s1", request, decision, n)
    }

    /// Cuts the last `n` records off a decisions or chain file (each framed by its length,
    /// `u32` little-endian, before and after it), as someone with the state directory could.
    fn cut_last(path: &Path, n: usize) {
        let bytes = std::fs::read(path).unwrap();
        let mut end = bytes.len();
        for _ in 0..n {
            let len = u32::from_le_bytes(bytes[end - 4..end].try_into().unwrap()) as usize;
            end -= len + 8;
        }
        let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.set_len(end as u64).unwrap();
    }

    /// A ledger of five decisions whose head was published into `config` at its stop.
    fn stopped_ledger(path: &Path, config: &Path) -> ChainKey {
        let key = ChainKey::load_or_create(config).unwrap();
        let ledger = Ledger::open(path).unwrap();
        ledger.publish_head_to(config, key.clone()).unwrap();
        for n in 1..=5 {
            ledger.append_decision(decision(n)).unwrap();
        }
        ledger.fold_journal().unwrap();
        key
    }

    #[test]
    fn records_cut_off_the_chains_end_are_found_by_the_published_head_alone() {
        let temp = tempfile::tempdir().unwrap();
        let (path, config) = (temp.path().join("ledger"), temp.path().join("config"));
        let key = stopped_ledger(&path, &config);
        assert_eq!(ChainHead::load(&config).unwrap().unwrap().seq, 5);

        let mut decisions = path.as_os_str().to_owned();
        decisions.push(".decisions");
        let mut chain = path.as_os_str().to_owned();
        chain.push(".chain");
        cut_last(Path::new(&decisions), 2);
        cut_last(Path::new(&chain), 2);

        let ledger = Ledger::open(&path).unwrap();
        // The chain itself cannot tell: what is left of it is whole.
        let report = ledger.audit().unwrap();
        assert!(
            report.chain_findings.is_empty(),
            "{:?}",
            report.chain_findings
        );
        assert_eq!(report.decisions, 3);
        let head = ChainHead::load(&config).unwrap().unwrap();
        let found = ledger.check_head(&head, Some(&key)).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].problem, ChainProblem::Truncated);
        assert!(
            found[0].detail.starts_with("links 4 to 5 are missing"),
            "{}",
            found[0]
        );
    }

    #[test]
    fn an_untouched_ledger_matches_its_head_and_a_new_open_appends_after_it() {
        let temp = tempfile::tempdir().unwrap();
        let (path, config) = (temp.path().join("ledger"), temp.path().join("config"));
        let key = stopped_ledger(&path, &config);
        let ledger = Ledger::open(&path).unwrap();
        let head = ChainHead::load(&config).unwrap().unwrap();
        assert!(ledger.check_head(&head, Some(&key)).unwrap().is_empty());
        // Links after the head (not folded yet) are no finding.
        ledger.append_decision(decision(6)).unwrap();
        assert!(ledger.check_head(&head, Some(&key)).unwrap().is_empty());
    }
}
