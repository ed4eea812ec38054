//! `codaris-ncbi`: a client for NCBI's E-utilities (`esearch`, `esummary`, `efetch`) and the
//! records `search_pubmed` and `search_geo_sra` answer with.
//!
//! One [`Eutils`] is shared by the whole daemon: its clones share a throttle that keeps every
//! session together under NCBI's limit (3 requests a second, 10 with an API key), and an
//! answer 429 is retried with backoff. `tool` and `email` go with every request; the API key
//! goes only to the configured E-utilities address and never into an error or a `Debug` print.
//!
//! Non-goals: deciding what a call may do (the daemon's policy); any NCBI service beyond the
//! E-utilities; history-server paging (`usehistory`), which no tool here needs.

mod client;
mod efetch;
mod error;
mod esearch;
mod sra;
mod summary;
mod throttle;
mod tls;
mod xml;

pub use client::DEFAULT_BASE_URL;
pub use client::DEFAULT_TOOL;
pub use client::Eutils;
pub use client::EutilsConfig;
pub use client::POST_ABOVE_IDS;
pub use efetch::RunInfo;
pub use efetch::parse_pubmed_abstracts;
pub use efetch::parse_runinfo;
pub use error::NcbiError;
pub use esearch::Esearch;
pub use esearch::SearchResult;
pub use esearch::parse_esearch;
pub use sra::SraRun;
pub use sra::SraSummary;
pub use summary::GdsSummary;
pub use summary::PubmedSummary;
pub use summary::RawSummary;
pub use summary::parse_esummary;
pub use throttle::REQUESTS_PER_SECOND_WITH_KEY;
pub use throttle::REQUESTS_PER_SECOND_WITHOUT_KEY;
pub use throttle::Spacing;
pub use throttle::interval_for;
