//! `/proc/<pid>/stat`: the state, parent and process group of a process, as the shell tools
//! (is a group alive, which zombies are ours) and the daemon's socket guard (who started a
//! peer) read them.

use std::io;

/// The fields of a `/proc/<pid>/stat` line Codaris reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// The state letter: `R`, `S`, `D`, `Z` (zombie), `X` (dead), …
    pub state: char,
    pub parent: i32,
    pub group: i32,
}

impl ProcStat {
    /// Parses `pid (comm) state ppid pgrp …`. The command name may itself hold spaces and
    /// parentheses, so the fields are read after its last `)`.
    pub fn parse(line: &str) -> Option<Self> {
        let (_, after) = line.rsplit_once(')')?;
        let mut fields = after.split_ascii_whitespace();
        let state = fields.next()?.chars().next()?;
        let parent = fields.next()?.parse().ok()?;
        let group = fields.next()?.parse().ok()?;
        Some(Self {
            state,
            parent,
            group,
        })
    }

    /// Reads and parses `/proc/<pid>/stat`.
    pub fn read(pid: i32) -> io::Result<Self> {
        let line = crate::files::fence::system::read_kernel(std::path::Path::new(&format!(
            "/proc/{pid}/stat"
        )))?;
        Self::parse(&line).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("/proc/{pid}/stat does not read as a process status line"),
            )
        })
    }

    /// An exited process its parent has not waited for.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }

    /// Running or able to run: neither a zombie nor dead.
    pub fn is_live(&self) -> bool {
        !matches!(self.state, 'Z' | 'X')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_after_the_last_parenthesis_of_the_name() {
        let stat = |state, parent, group| {
            Some(ProcStat {
                state,
                parent,
                group,
            })
        };
        assert_eq!(ProcStat::parse("42 (sh) S 7 42 42 0 -1"), stat('S', 7, 42));
        assert_eq!(ProcStat::parse("42 (a) b) (c) R 9 1 1"), stat('R', 9, 1));
        assert_eq!(ProcStat::parse("12 (a) Z b) Z 7 40 40 0"), stat('Z', 7, 40));
        assert_eq!(
            ProcStat::parse("12 (a b) c) S 1 4242 4242 0"),
            stat('S', 1, 4242)
        );
        assert_eq!(ProcStat::parse("42 sh S 7 1"), None);
        assert_eq!(ProcStat::parse("42 (sh) S 7"), None);
        assert_eq!(ProcStat::parse("garbage"), None);
    }

    #[test]
    fn zombies_and_the_dead_are_not_live() {
        for (state, zombie, live) in [('S', false, true), ('Z', true, false), ('X', false, false)] {
            let stat = ProcStat {
                state,
                parent: 1,
                group: 1,
            };
            assert_eq!(
                (stat.is_zombie(), stat.is_live()),
                (zombie, live),
                "{state}"
            );
        }
    }

    #[test]
    fn this_process_reads_as_live_with_its_parent() -> io::Result<()> {
        let me = ProcStat::read(std::process::id().try_into().unwrap_or(i32::MAX))?;
        assert!(me.is_live());
        assert_eq!(
            me.parent,
            rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get())
        );
        Ok(())
    }
}
