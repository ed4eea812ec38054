//! `codaris_nextflow::runs` on verbatim text in Nextflow's documented formats
//! (tests/fixtures/runs/, sources in its README) and on adversarial run directories.

mod runs {
    pub mod failing;
    pub mod fuzz;
    pub mod parsers;
    pub mod status;
    pub mod support;
    pub mod taskdir;
}
