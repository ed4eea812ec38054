//! Where the ledger publishes its chain's head, and the key that signs it: the configuration
//! directory, outside the state directory, hidden from commands and refused to every tool
//! (see docs/ledger.md, "The published head").

use std::path::{Path, PathBuf};

use codaris_ledger::{ChainKey, HEAD_FILE, KEY_FILE, Ledger};

use crate::config::Config;

/// The directory of the configuration file the daemon reads (whether or not it exists).
pub fn dir(config: &Config) -> Option<PathBuf> {
    config
        .config_path
        .as_ref()
        .or(config.config_file.as_ref())
        .and_then(|file| file.parent())
        .map(Path::to_path_buf)
}

/// The key and head files, which no tool or command may read or write.
pub fn files(config: &Config) -> Vec<PathBuf> {
    dir(config)
        .map(|dir| vec![dir.join(KEY_FILE), dir.join(HEAD_FILE)])
        .unwrap_or_default()
}

/// Creates the key at the first start and publishes the head from now on. A directory that
/// cannot take them leaves the chain's end unpublished, which is said, not fatal: the ledger
/// records as before.
pub fn start_publishing(ledger: &Ledger, config: &Config) {
    let Some(dir) = dir(config) else {
        tracing::warn!("no configuration directory: the ledger's chain head is not published");
        return;
    };
    let published =
        ChainKey::load_or_create(&dir).and_then(|key| ledger.publish_head_to(&dir, key));
    match published {
        Ok(head) => tracing::info!(
            seq = head.seq,
            hash = short(&head.hash),
            dir = %dir.display(),
            "published the ledger's chain head"
        ),
        Err(err) => tracing::warn!(%err, "the ledger's chain head is not published"),
    }
}

/// Publishes the head once more (at an orderly stop, after the journal is folded) and logs it:
/// the log is a second place a command cannot write that holds the chain's end.
pub fn publish_at_stop(ledger: &Ledger) {
    match ledger.publish_head() {
        Ok(Some(head)) => {
            tracing::info!(
                seq = head.seq,
                hash = short(&head.hash),
                "published the ledger's chain head"
            );
        }
        Ok(None) => {}
        Err(err) => tracing::warn!(%err, "the ledger's chain head was not published"),
    }
}

/// The head's hash as the log holds it: its first 16 hex digits (64 bits), enough to show a
/// chain rewritten since, and no run of 64 hex digits in the log (the shape a card's secret
/// would have, which the log is checked never to hold).
fn short(hash: &str) -> &str {
    hash.get(..16).unwrap_or(hash)
}
