//! The order of entries at build time never changes a result.
