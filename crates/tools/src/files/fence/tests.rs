//! The rule that makes the fence structural, checked by `cargo test` (CI does not run clippy
//! with `clippy.toml`'s list on every path): no file of this crate opens a file by path
//! outside `src/files/fence/`, but in its tests.
#![expect(
    clippy::disallowed_methods,
    reason = "the check reads this crate's sources, which no tool does"
)]

use std::path::{Path, PathBuf};

/// Calls that open or read a file by path, as written in source (`std::fs::…`, `tokio::fs::…`,
/// or through `use std::fs;`). Kept in step with `clippy.toml`'s `disallowed-methods`.
const OPENING: &[&str] = &[
    "File::open(",
    "File::create(",
    "File::create_new(",
    "fs::read(",
    "fs::read_to_string(",
    "fs::read_dir(",
    "fs::copy(",
    "open_ambient_dir(",
    "use std::fs::read",
    "use tokio::fs::read",
    "use std::fs::copy",
    "use tokio::fs::copy",
];

/// The standard library's and tokio's `OpenOptions`, whose `.open(` opens by path.
const OPTIONS: &[&str] = &["std::fs::OpenOptions", "tokio::fs::OpenOptions"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            sources(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `file:line: text` of every opening call in `text` before its tests (a `#[cfg(test)]`
/// module closes each file of this crate, a file of tests starts with `#![cfg(test)]`); `OpenOptions` counts when an `.open(` follows it
/// within the statement.
fn openings(name: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        // `#![cfg(test)]` heads a file of tests of its own (`mounts/tests.rs`).
        if code.starts_with("#[cfg(test)]") || code.starts_with("#![cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let options = OPTIONS.iter().any(|o| code.contains(o))
            && lines
                .iter()
                .skip(i)
                .take(6)
                .any(|l| l.contains(".open(") && !l.trim_start().starts_with("//"));
        if options || OPENING.iter().any(|call| code.contains(call)) {
            found.push(format!("{name}:{}: {}", i + 1, code));
        }
    }
    found
}

#[test]
fn no_open_outside_the_fence() -> std::io::Result<()> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let fence = src.join("files").join("fence");
    let mut files = Vec::new();
    sources(&src, &mut files)?;
    files.sort();
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&fence)) {
        let name = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        found.extend(openings(&name, &std::fs::read_to_string(file)?));
    }
    assert!(
        found.is_empty(),
        "files opened outside the fence (use files::fence::open for a path a tool reads, \
         files::fence::system for the kernel's and the daemon's own files):\n{}",
        found.join("\n")
    );
    Ok(())
}

#[test]
fn the_check_sees_each_form_of_an_open() {
    let text = "fn f() {\n    let a = std::fs::read_to_string(p);\n    let b = tokio::fs::File::open(p).await;\n    let c = fs::read_dir(p);\n    let d = std::fs::OpenOptions::new()\n        .write(true)\n        .open(p);\n    // std::fs::read(p) in a comment\n    let e = Dir::open_ambient_dir(p, a);\n}\n#[cfg(test)]\nmod tests { fn g() { std::fs::read(p); } }\n";
    let lines: Vec<usize> = openings("x.rs", text)
        .iter()
        .filter_map(|f| f.split(':').nth(1)?.parse().ok())
        .collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 9]);
}
