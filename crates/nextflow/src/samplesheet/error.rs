//! Why a gate could not be run at all (as opposed to a sheet that fails it).

use std::path::PathBuf;

/// A gate that could not validate: the sheet or the schema could not be read, or the
/// combination is one nf-schema refuses before validating. A sheet that is read and
/// validated but breaks the schema is not an error: it is a [`super::GateReport`] that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a regular file")]
    NotAFile { path: PathBuf },
    #[error("`{path}` is {size} bytes, over the gate's limit of {limit} bytes; split the sheet")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("`{path}` is not valid UTF-8 (first bad byte on line {line}); save it as UTF-8")]
    NotUtf8 { path: PathBuf, line: usize },
    #[error("cannot tell the format of `{path}`: name it .csv, .tsv, .json, .yaml or .yml")]
    UnknownFormat { path: PathBuf },
    #[error("`{path}` is not a valid {format} samplesheet: {message}")]
    Parse {
        path: PathBuf,
        format: &'static str,
        message: String,
    },
    #[error("`{path}` must hold a list of entries, found {found}")]
    NotAList { path: PathBuf, found: &'static str },
    #[error(
        "Using \"type\": \"array\" or \"type\": \"object\" in schema with a \".{extension}\" samplesheet is not supported (field `{field}`); use a JSON or YAML samplesheet"
    )]
    NestedFieldInDelimited {
        extension: &'static str,
        field: String,
    },
    #[error("the schema `{path}` is not valid JSON: {message}")]
    SchemaJson { path: PathBuf, message: String },
    #[error(
        "the schema `{path}` uses draft `{draft}`; nf-schema requires \"https://json-schema.org/draft/2020-12/schema\""
    )]
    SchemaDraft { path: PathBuf, draft: String },
    #[error(
        "the schema `{path}` is not a samplesheet schema: 'items' must be the top level keyword and not 'properties'"
    )]
    SchemaShape { path: PathBuf },
    #[error("the schema `{path}` does not compile: {message}")]
    SchemaCompile { path: PathBuf, message: String },
}
