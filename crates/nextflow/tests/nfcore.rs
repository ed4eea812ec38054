//! The nf-core wrappers and the runner: parsers on output recorded from nf-core 4.2.1
//! (tests/fixtures/nfcore/), and the real nf-core from `.ci/nfcore.sh`'s venv with the fake
//! `nextflow` (tests/fixtures/nextflow/nextflow at the repository root) first on PATH.
//!
//! Under CI (`CI` set) a missing nf-core fails the live tests; elsewhere they say so and pass.

mod nfcore {
    pub mod fake_nextflow;
    pub mod live;
    pub mod recorded;
    pub mod runner;
    pub mod support;
}
