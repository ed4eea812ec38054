//! The Nextflow reader (`codaris_nextflow::parse`) on the real nf-core template and on
//! adversarial inputs.

mod parse {
    mod adversarial;
    mod config;
    mod syntax;
    mod template;
}
