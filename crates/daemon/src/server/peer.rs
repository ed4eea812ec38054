//! Who may talk to the daemon on its Unix socket: nobody the daemon started.
//!
//! Every process a tool starts runs as the person's user, so the socket's file mode does not
//! keep it out. The kernel tells who connected (`SO_PEERCRED`); a peer whose chain of parents
//! reaches the daemon is one of its own commands (or their children) and is refused before
//! any RPC is served. The daemon itself (in-process tests, its own health checks) is not.
//! Together with the daemon being its children's subreaper, orphaned and double-forked
//! descendants stay in the chain.

use std::io;

use tokio::net::UnixStream;
use tokio_stream::{Stream, StreamExt};

/// The most parents walked before the chain counts as unreadable; real chains are short,
/// and the bound keeps a corrupt or cyclic answer from looping.
const MAX_DEPTH: usize = 4096;

/// What the daemon makes of a connection's peer.
#[derive(Debug)]
pub enum Peer {
    /// Not started by the daemon: served.
    Outside,
    /// A strict descendant of the daemon: refused.
    Descendant { pid: i32 },
    /// Who it is cannot be told: refused, since a descendant must never be let through.
    Unknown { pid: Option<i32>, reason: io::Error },
}

/// Keeps from `incoming` only the connections whose peer is not a descendant of this
/// process; each refusal is logged once, at warn, with the peer's pid.
pub fn guard(
    incoming: impl Stream<Item = io::Result<UnixStream>>,
) -> impl Stream<Item = io::Result<UnixStream>> {
    let daemon = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    incoming.filter_map(move |accepted| match accepted {
        Ok(stream) => match classify(&stream, daemon) {
            Peer::Outside => Some(Ok(stream)),
            Peer::Descendant { pid } => {
                tracing::warn!(
                    peer_pid = pid,
                    "refused a connection from a process the daemon started: tools and commands may not use the API"
                );
                None
            }
            Peer::Unknown { pid, reason } => {
                tracing::warn!(
                    peer_pid = ?pid,
                    %reason,
                    "refused a connection whose peer cannot be told apart from the daemon's own commands"
                );
                None
            }
        },
        Err(err) => Some(Err(err)),
    })
}

fn classify(stream: &UnixStream, daemon: i32) -> Peer {
    let pid = match stream.peer_cred() {
        Ok(cred) => cred.pid(),
        Err(err) => {
            return Peer::Unknown {
                pid: None,
                reason: err,
            };
        }
    };
    match pid {
        // A peer in a pid namespace this one cannot see: never one the daemon started, since
        // a child's namespace is always visible from its parent's.
        None | Some(0) => Peer::Outside,
        Some(pid) => match descends_from(pid, daemon, parent_from_proc) {
            Ok(true) => Peer::Descendant { pid },
            Ok(false) => Peer::Outside,
            Err(err) => Peer::Unknown {
                pid: Some(pid),
                reason: err,
            },
        },
    }
}

/// Whether `pid` is a strict descendant of `ancestor`, walking parents with `parent_of` up to
/// pid 1 (or a pid with no parent in view, 0).
fn descends_from(
    pid: i32,
    ancestor: i32,
    parent_of: impl Fn(i32) -> io::Result<i32>,
) -> io::Result<bool> {
    if pid == ancestor {
        return Ok(false);
    }
    let mut current = pid;
    for _ in 0..MAX_DEPTH {
        if current <= 1 {
            return Ok(false);
        }
        let parent = parent_of(current)?;
        if parent == ancestor {
            return Ok(true);
        }
        current = parent;
    }
    Err(io::Error::other(format!(
        "the parents of pid {pid} go deeper than {MAX_DEPTH}"
    )))
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
fn parent_from_proc(pid: i32) -> io::Result<i32> {
    codaris_tools::shell::ProcStat::read(pid).map(|stat| stat.parent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn chain(pairs: &[(i32, i32)]) -> impl Fn(i32) -> io::Result<i32> {
        let parents: HashMap<i32, i32> = pairs.iter().copied().collect();
        move |pid| {
            parents
                .get(&pid)
                .copied()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }
    }

    #[test]
    fn a_child_and_a_grandchild_descend_and_the_daemon_itself_does_not() -> io::Result<()> {
        // 1 -> 10 (daemon) -> 20 (sh) -> 30 (client); 40 is the person's shell.
        let parents = chain(&[(10, 1), (20, 10), (30, 20), (40, 1), (50, 40)]);
        assert!(descends_from(20, 10, &parents)?);
        assert!(descends_from(30, 10, &parents)?);
        assert!(!descends_from(10, 10, &parents)?, "the daemon itself");
        assert!(!descends_from(50, 10, &parents)?, "another tree");
        assert!(!descends_from(1, 10, &parents)?);
        Ok(())
    }

    #[test]
    fn an_unreadable_or_endless_chain_is_an_error_not_a_pass() {
        let gone = chain(&[(30, 20)]);
        assert!(descends_from(30, 10, &gone).is_err());
        let cycle = chain(&[(30, 20), (20, 30)]);
        assert!(descends_from(30, 10, &cycle).is_err());
    }

    #[test]
    fn this_process_is_not_its_own_descendant_and_its_child_is()
    -> Result<(), Box<dyn std::error::Error>> {
        let me = i32::try_from(std::process::id())?;
        assert!(!descends_from(me, me, parent_from_proc)?);
        let mut child = std::process::Command::new("sleep").arg("5").spawn()?;
        let pid = i32::try_from(child.id())?;
        let descends = descends_from(pid, me, parent_from_proc);
        child.kill()?;
        child.wait()?;
        assert!(descends?);
        assert!(
            !descends_from(me, pid, parent_from_proc)?,
            "a parent is no descendant"
        );
        Ok(())
    }
}
