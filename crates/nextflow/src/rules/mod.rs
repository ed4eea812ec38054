//! The compliance rules: a rule set shipped as data, and the checks that run it over a pipeline.
//!
//! A rule is data ([`Rule`]): an id such as `NF-CONTAINER-PINNED`, a title, a [`Severity`], a
//! description of what it checks, whether it can be fixed automatically, and its [`Check`]. A
//! check is either one of the named checks implemented in Rust ([`BuiltinCheck`]), or a generic,
//! data-only check ([`GenericCheck`]: a forbidden pattern, a required file, a required config key,
//! required lines) that an operator can write in a rule file of their own.
//!
//! The built-in rule set is `builtin.toml`, embedded in the binary; [`RuleSet::load`] adds the
//! `*.toml` files of a configuration directory. Running the rules over a [`SourceTree`] gives
//! [`Finding`]s; the audit, the autofix and the remediation plan built on them are in
//! [`crate::audit`].
//!
//! Not a goal: evaluating Nextflow. Everything here reads the pipeline's text; what a check
//! cannot decide statically (a container computed at run time) it says so in its finding
//! rather than guessing.

pub(crate) mod checks;
mod config;
mod error;
pub(crate) mod finding;
mod generic;
mod load;
mod pipeline;
mod rule;
pub(crate) mod vendored;

pub use error::RuleError;
pub use finding::{Finding, render_findings, render_reasons};
pub use pipeline::{SourceTree, TreeError};
pub use rule::{BuiltinCheck, Check, GenericCheck, Rule, RuleSet, Severity, render_rules};
pub use vendored::is_vendored;
