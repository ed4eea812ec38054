//! The compliance rules, the audit, the autofix and the remediation plan, on real pipeline trees.

mod rules_support;

mod rules_audit;
mod rules_files;
mod rules_fix;
mod rules_fixtures;
