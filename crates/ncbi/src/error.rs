//! What can go wrong talking to the E-utilities. Every message is one line a model can act on,
//! and none carries the API key: details taken from a response or a transport error are
//! redacted by the client before they land here.

/// An E-utilities failure; `utility` is `esearch`, `esummary` or `efetch`.
#[derive(Debug, thiserror::Error)]
pub enum NcbiError {
    #[error("`{base_url}` is not a usable E-utilities base URL (http or https, ending in `/`)")]
    BadBaseUrl { base_url: String },
    #[error("the NCBI `tool` name must be letters, digits, `_`, `-` or `.` (got `{tool}`)")]
    BadTool { tool: String },
    #[error("could not set up the HTTP client for NCBI: {detail}")]
    Client { detail: String },
    #[error("NCBI {utility} request failed: {detail}")]
    Request {
        utility: &'static str,
        detail: String,
    },
    #[error("NCBI {utility} did not answer within {seconds} s")]
    Timeout { utility: &'static str, seconds: u64 },
    #[error(
        "NCBI rate limit exceeded on {utility} after {retries} retries{limit}: wait a few seconds and try again, or configure an NCBI API key"
    )]
    RateLimited {
        utility: &'static str,
        retries: u32,
        /// ` (limit 3 requests a second)` when the answer said so, else empty.
        limit: String,
    },
    #[error("NCBI {utility} answered HTTP {status}: {detail}")]
    Status {
        utility: &'static str,
        status: u16,
        detail: String,
    },
    #[error("NCBI {utility} answered with a body that is not {expected}: {detail}")]
    Malformed {
        utility: &'static str,
        expected: &'static str,
        detail: String,
    },
    #[error("NCBI {utility} reported an error: {message}")]
    Reported {
        utility: &'static str,
        message: String,
    },
    #[error("NCBI {utility} answered more than {limit} bytes")]
    TooLarge { utility: &'static str, limit: usize },
}
