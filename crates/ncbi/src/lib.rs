//! `codaris-ncbi`: a client for NCBI's E-utilities (`esearch`, `esummary`, `efetch`) and the
//! records `search_pubmed` and `search_geo_sra` answer with.
//!
//! Non-goals: deciding what a call may do (the daemon's policy); any NCBI service beyond the
//! E-utilities.
