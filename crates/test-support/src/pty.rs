//! A pseudo-terminal for tests that need a program to believe it writes to a person's
//! terminal (a status line, colours): the test reads the master side, the program gets the
//! slave side as its standard streams.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// The two ends of a fresh pseudo-terminal of 40 rows and 160 columns.
#[derive(Debug)]
pub struct Pty {
    pub master: OwnedFd,
    pub slave: std::fs::File,
}

impl Pty {
    pub fn open() -> Self {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master =
            openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().expect("a UTF-8 pts name"))
            .expect("open the pts");
        // A real terminal's size, so a status line has room for what it shows.
        rustix::termios::tcsetwinsize(
            &slave,
            rustix::termios::Winsize {
                ws_row: 40,
                ws_col: 160,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .expect("set the terminal's size");
        Self { master, slave }
    }

    /// The slave side as one of a command's standard streams.
    pub fn stream(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().expect("dup the pts"))
    }

    /// `command` with the terminal as its standard input, output and error.
    pub fn attach<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command
            .stdin(self.stream())
            .stdout(self.stream())
            .stderr(self.stream())
    }
}

/// Everything written to the terminal so far, read by a thread of its own so the program
/// never blocks on a full terminal. Reading ends (EIO) once every slave side is closed.
pub fn screen_of(master: OwnedFd) -> Arc<Mutex<Vec<u8>>> {
    let screen = Arc::new(Mutex::new(Vec::new()));
    let into = screen.clone();
    std::thread::spawn(move || {
        let mut master = std::fs::File::from(master);
        let mut chunk = [0u8; 4096];
        while let Ok(n) = master.read(&mut chunk) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(&chunk[..n]);
        }
    });
    screen
}
