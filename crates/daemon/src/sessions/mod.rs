//! Sessions: their records in the ledger's store and their ids, their filing (title, tags), the live sessions and the turns
//! they run (`turns`), the project instructions read into a turn's prompt, and the provider
//! settings a new session is made with.

pub mod extra_roots;
pub mod filing;
pub mod ids;
pub mod instructions;
pub mod model_choice;
pub mod providers;
pub mod store;
pub mod turns;

pub use store::{NewSession, SessionStore};
