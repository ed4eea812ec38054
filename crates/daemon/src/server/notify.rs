//! Telling a service manager how the daemon is doing: `READY=1` once the socket listens and
//! `STOPPING=1` when an orderly stop begins, for a systemd `Type=notify` unit.
//!
//! Only when `NOTIFY_SOCKET` is set (systemd sets it for the unit's main process); elsewhere
//! these do nothing. The variable is never passed on to the commands a session runs (see
//! `codaris_tools::shell`), so no command can speak for the daemon.
//!
//! Non-goals: the watchdog protocol and socket activation.

/// The socket listens: a unit waiting on this daemon may start its dependents.
pub fn ready(socket: &std::path::Path) {
    send(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&format!("serving {}", socket.display())),
    ]);
}

/// An orderly stop has begun.
pub fn stopping() {
    send(&[sd_notify::NotifyState::Stopping]);
}

fn send(states: &[sd_notify::NotifyState<'_>]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(err) = sd_notify::notify(false, states) {
        tracing::warn!(%err, "could not notify the service manager");
    }
}
