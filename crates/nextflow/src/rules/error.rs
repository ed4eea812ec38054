//! Errors of rule files: one line each, naming the file and, where there is one, the key.

/// A rule file that cannot be used. `file` is `built-in` or the file's path; `key` is the
/// dotted path of the offending key, e.g. `rule[2].check.pattern` (rules counted from 0).
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("rules file `{file}`: line {line}: {message}")]
    Syntax {
        file: String,
        line: usize,
        message: String,
    },
    #[error("rules file `{file}`: key `{key}`: {problem}")]
    Key {
        file: String,
        key: String,
        problem: String,
    },
    #[error("rules file `{file}`: rule `{id}` is already defined in `{first}`")]
    Duplicate {
        file: String,
        id: String,
        first: String,
    },
    #[error("rules directory `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
