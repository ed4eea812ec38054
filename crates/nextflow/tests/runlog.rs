//! The run-log readers (`codaris_nextflow::runlog`) on verbatim Nextflow output
//! (`tests/fixtures/runlog/`, sources in its README) and on adversarial inputs.
#![cfg(test)]

mod runlog {
    mod adversarial;
    mod any_text;
    mod console;
    mod diagnosis;
    mod log;

    use std::path::PathBuf;

    /// A fixture's bytes.
    pub fn fixture(name: &str) -> Vec<u8> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runlog")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// A fixture as text.
    pub fn fixture_text(name: &str) -> String {
        String::from_utf8(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}
