//! The documentation built into the binary: `docs/*.md` and the README, as they were when it
//! was compiled. A page is named by a word from this list and nothing else: no tool turns a
//! page argument into a path, so no argument can reach a file.

/// One built-in page.
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    /// The name a call gives: the file's stem (`mcp`), `readme` for the README.
    pub name: &'static str,
    /// Where it lives in the repository, as a person would look it up.
    pub path: &'static str,
    /// Its Markdown.
    pub text: &'static str,
}

macro_rules! pages {
    ($($name:literal => $path:literal,)*) => {
        /// Every built-in page, the README first, then `docs/` in name order.
        pub static PAGES: &[Page] = &[
            $(Page {
                name: $name,
                path: $path,
                text: include_str!(concat!("../../../../", $path)),
            },)*
        ];
    };
}

pages! {
    "readme" => "README.md",
    "acp" => "docs/acp.md",
    "api" => "docs/api.md",
    "architecture" => "docs/architecture.md",
    "beyond-one-machine" => "docs/beyond-one-machine.md",
    "cli" => "docs/cli.md",
    "decision-codes" => "docs/decision-codes.md",
    "first-hour" => "docs/first-hour.md",
    "hooks" => "docs/hooks.md",
    "ledger" => "docs/ledger.md",
    "mcp" => "docs/mcp.md",
    "memory" => "docs/memory.md",
    "nextflow" => "docs/nextflow.md",
    "operations" => "docs/operations.md",
    "performance" => "docs/performance.md",
    "providers" => "docs/providers.md",
    "research" => "docs/research.md",
    "scheduler" => "docs/scheduler.md",
    "search" => "docs/search.md",
    "self-configuration" => "docs/self-configuration.md",
    "surface" => "docs/surface.md",
    "tools" => "docs/tools.md",
}

/// The page a call names: its name (`mcp`), its file name (`mcp.md`, `README.md`) or its
/// repository path (`docs/mcp.md`), compared without regard to ASCII case, and only against
/// this list.
pub fn find(name: &str) -> Option<&'static Page> {
    let name = name.trim();
    PAGES.iter().find(|page| {
        let file = page.path.rsplit('/').next().unwrap_or(page.path);
        [page.name, page.path, file]
            .iter()
            .any(|known| known.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page added to `docs/` is built in too: the list must name every one.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test lists the repository's own docs/, not a path a tool reads"
    )]
    fn every_markdown_page_of_docs_is_built_in() {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let mut on_disk: Vec<String> = std::fs::read_dir(docs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".md"))
            .map(|name| format!("docs/{name}"))
            .collect();
        on_disk.sort();
        let listed: Vec<String> = PAGES
            .iter()
            .filter(|p| p.path.starts_with("docs/"))
            .map(|p| p.path.to_owned())
            .collect();
        assert_eq!(listed, on_disk);
    }

    #[test]
    fn a_page_is_found_by_name_file_or_path_and_never_by_a_path_elsewhere() {
        assert_eq!(find("mcp").map(|p| p.path), Some("docs/mcp.md"));
        assert_eq!(find("MCP.md").map(|p| p.path), Some("docs/mcp.md"));
        assert_eq!(find("docs/mcp.md").map(|p| p.path), Some("docs/mcp.md"));
        assert_eq!(find("README.md").map(|p| p.name), Some("readme"));
        for path in [
            "../../etc/passwd",
            "/etc/passwd",
            "docs/../README.md",
            "./mcp.md",
            "~/.ssh/id_rsa",
            "",
        ] {
            assert!(find(path).is_none(), "{path}");
        }
    }
}
