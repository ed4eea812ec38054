//! The argument bounds the schemas show the model, which the tools also enforce: one number
//! for both, so the model is never shown a bound the tool does not keep.

/// `run_command` and `ssh_run_command`: the longest `timeout_seconds`.
pub const COMMAND_MAX_TIMEOUT_SECONDS: u64 = 3600;

/// `background_wait`: the longest `timeout_seconds`.
pub const WAIT_MAX_SECONDS: u64 = 600;

/// `webfetch`: the longest `timeout_seconds`.
pub const WEBFETCH_MAX_TIMEOUT_SECONDS: u64 = 120;

/// `webfetch`: the most characters of Markdown `max_chars` may ask for.
pub const WEBFETCH_MAX_CHARS: u64 = 1_000_000;

/// `http_request`: the longest `timeout_seconds`.
pub const HTTP_REQUEST_MAX_TIMEOUT_SECONDS: u64 = 600;

/// `search_pubmed`: the most articles `max_results` may ask for.
pub const PUBMED_MAX_RESULTS: u64 = 100;

/// `search_geo_sra`: the most GEO series or SRA experiments `max_results` may ask for.
pub const GEO_SRA_MAX_RESULTS: u64 = 50;

/// `plan_write`: the longest slug, in ASCII characters.
pub const PLAN_SLUG_MAX: usize = 64;

/// `plan_write`: the largest plan document, in bytes of UTF-8.
pub const PLAN_MAX_BYTES: usize = 256 * 1024;

/// `session_describe`: the longest title, in characters.
pub const TITLE_MAX_CHARS: usize = 80;

/// `session_describe`: the most tags a session carries.
pub const TAGS_MAX: usize = 16;

/// `session_describe`: the longest tag, in characters.
pub const TAG_MAX_CHARS: usize = 32;

/// `load_skill`: the longest skill name, in characters (the longest the skills scan accepts).
pub const SKILL_NAME_MAX_CHARS: usize = 100;

/// `codaris_docs_search`: the most hits `limit` may ask for.
pub const DOCS_SEARCH_LIMIT_MAX: u64 = 20;

/// `codaris_docs_search`: how many hits when `limit` is not given.
pub const DOCS_SEARCH_LIMIT_DEFAULT: u64 = 5;
