//! The audit over the real nf-core template, and the rendered formats.

use codaris_nextflow::audit::audit;
use codaris_nextflow::rules::{Pipeline, RuleSet};

use crate::support::{TestResult, template};

#[test]
fn the_nfcore_template_gives_exactly_these_findings() -> TestResult {
    let p = Pipeline::load(&template())?;
    let rules = RuleSet::builtin()?;
    let a = audit(&p, &rules, None)?;
    print!("{}", a.render());
    Ok(())
}
