//! A tolerant, line-aware static reader of Nextflow DSL2 scripts and configs.
//!
//! It is not a Groovy parser. It lexes Groovy faithfully enough to know where strings, comments
//! and blocks end, then reads the constructs the tools need — processes with their directives
//! and sections, workflows, includes, params, functions, and the scopes, selectors, profiles
//! and includes of `nextflow.config` — with the file and 1-based line of each.
//!
//! Anything it does not understand is kept as an [`Unparsed`] entry (file, line, what), so the
//! tools built on it can say "not understood here" instead of guessing. Nothing in it panics on
//! input, evaluates code, or touches the network.
//!
//! Entry points: [`Pipeline::load`] for a directory, [`parse_script`] and [`parse_config`] for
//! one text, [`load_config`] for a config with its includes; [`render_outline`] and
//! [`render_unparsed`] for the lines a tool shows.

mod config;
mod lex;
mod model;
mod pipeline;
mod render;
mod runtime;
mod script;
mod select;
mod source;
mod tree;

pub use config::{NFTEST_CONFIG, is_nftest_config, load_config, parse_config};
pub use lex::{StringLiteral, string_literals};
pub use model::{
    Arg, Block, Config, ConfigDef, ConfigInclude, Declaration, Directive, Emit, Function, Include,
    IncludedName, Named, NfFile, Other, Param, Process, ProcessSelector, Profile, Script,
    ScriptKind, SelectorBlock, SelectorKind, Setting, Skipped, Unparsed, Value, Workflow,
    key_parts,
};
pub use pipeline::Pipeline;
pub use render::{render_outline, render_unparsed};
pub use runtime::describe_runtime;
pub use script::parse_script;
pub use select::{ProcessSetting, selects};
pub use source::{MAX_FILE_BYTES, decode};

/// Why a file or directory could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not UTF-8 text (first bad byte on line {line})")]
    NotUtf8 { path: String, line: u32 },
    #[error("`{path}` is {size} bytes, over the {limit}-byte limit")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("`{path}` is outside the pipeline directory")]
    OutsideRoot { path: String },
    #[error("`{path}` is not a directory")]
    NotADirectory { path: String },
}

impl ParseError {
    /// The line the error is about: the bad byte's line, else 1 (the file as a whole).
    pub fn line(&self) -> u32 {
        match self {
            ParseError::NotUtf8 { line, .. } => *line,
            _ => 1,
        }
    }
}
