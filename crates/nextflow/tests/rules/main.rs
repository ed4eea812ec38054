//! The compliance rules, the audit, the autofix and the remediation plan, on real pipeline trees.

mod support;

mod audit;
mod files;
mod fix;
mod fixtures;
mod props;
