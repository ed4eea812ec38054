//! `codaris-paths`: where the daemon keeps its state and where configuration is read from.
//!
//! Shared by `codarisd` and `codaris` so both agree on the socket and the state directory without
//! the CLI linking the daemon. Resolution is pure: the caller passes a lookup for environment
//! variables, so tests never depend on the machine's home directory.
//!
//! Non-goals: creating directories, checking permissions or reading files (the daemon does that).

mod layout;

pub use layout::Env;
pub use layout::PathsError;
pub use layout::StateLayout;
pub use layout::resolve_config_file;
pub use layout::resolve_state_dir;
