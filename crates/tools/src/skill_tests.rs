use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use codaris_index::{Entry, Kind};

use super::LoadSkill;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill(dir: &Path, name: &str, description: &str) -> Entry {
    let mut entry = Entry::new(name, Kind::Skill, description);
    entry.path = Some(dir.join(name).join("SKILL.md").display().to_string());
    entry
}

/// A skills directory with `debugging` (a reference beside it) and `nf-core-modules`, and a
/// directory outside it holding a secret.
fn setup() -> (tempfile::TempDir, PathBuf, Vec<Entry>) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("skills");
    write(
        &dir.join("debugging/SKILL.md"),
        "---\nname: debugging\ndescription: Debug a failed Nextflow run\n---\nLook in the work directory first.\n",
    );
    write(
        &dir.join("debugging/references/exit-codes.md"),
        "# Exit codes\n137 is OOM\n",
    );
    write(
        &dir.join("nf-core-modules/SKILL.md"),
        "---\nname: nf-core-modules\ndescription: Write an nf-core module\n---\nUse nf-core modules create.\n",
    );
    write(
        &temp.path().join("outside/evil/SKILL.md"),
        "---\nname: evil\ndescription: d\n---\nsecret\n",
    );
    write(&temp.path().join("outside/secret.txt"), "secret\n");
    let entries = vec![
        skill(&dir, "debugging", "Debug a failed Nextflow run"),
        skill(&dir, "nf-core-modules", "Write an nf-core module"),
    ];
    (temp, dir, entries)
}

fn message(err: crate::ToolError) -> String {
    err.to_string()
}

#[test]
fn a_skill_loads_whole_with_the_files_beside_it() {
    let (_temp, dir, entries) = setup();
    let tool = LoadSkill::new(std::slice::from_ref(&dir), &entries);
    let answer = tool.load("debugging").unwrap();
    let real = dir.canonicalize().unwrap();
    let mut lines = answer.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "skill `debugging` (`{}`), 5 lines; 1 file beside it, to read with read_file:",
            real.join("debugging/SKILL.md").display()
        )
    );
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "- {} (24 bytes)",
            real.join("debugging/references/exit-codes.md").display()
        )
    );
    assert!(
        answer.ends_with("---\nLook in the work directory first.\n"),
        "{answer}"
    );
    let other = tool.load(" nf-core-modules ").unwrap();
    assert!(
        other
            .lines()
            .next()
            .unwrap()
            .ends_with("; no other files beside it"),
        "{other}"
    );
}

#[test]
fn an_unknown_name_answers_the_closest_skills_in_one_line() {
    let (_temp, dir, entries) = setup();
    let tool = LoadSkill::new(&[dir], &entries);
    let err = message(tool.load("debuging").unwrap_err());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("load_skill: no catalogued skill `debuging`; the closest: `debugging`"),
        "{err}"
    );
    let none = LoadSkill::new(&[], &[]);
    let err = message(none.load("debugging").unwrap_err());
    assert_eq!(
        err,
        "load_skill: no catalogued skill `debugging`; no skills are catalogued (see `skills_dirs`)"
    );
}

/// A name is a key, never a path: nothing that climbs, starts at `/` or names a file is read.
#[test]
fn a_name_never_becomes_a_path() {
    let (_temp, dir, entries) = setup();
    let tool = LoadSkill::new(&[dir], &entries);
    for name in [
        "../outside/evil",
        "debugging/../nf-core-modules",
        "/etc/passwd",
        "debugging/SKILL.md",
        "debugging/references/exit-codes",
        "..",
        "",
    ] {
        let err = message(tool.load(name).unwrap_err());
        assert!(
            err.starts_with("load_skill: no catalogued skill"),
            "{name}: {err}"
        );
        assert!(!err.contains("secret"), "{err}");
    }
}

/// A skill folder, or its `SKILL.md`, that is a symlink out of the skills directory was
/// catalogued by the scan (which follows it) but is not read through it.
#[test]
fn a_symlink_out_of_the_skills_directory_is_refused() {
    let (temp, dir, mut entries) = setup();
    // Absolute and relative links: both lead out, and `..` out of a root is refused as well.
    symlink(temp.path().join("outside/evil"), dir.join("evil")).unwrap();
    symlink("../outside/evil", dir.join("climbing")).unwrap();
    std::fs::create_dir_all(dir.join("linked")).unwrap();
    symlink("../../outside/evil/SKILL.md", dir.join("linked/SKILL.md")).unwrap();
    symlink("../../outside/secret.txt", dir.join("debugging/secret.txt")).unwrap();
    for name in ["evil", "climbing", "linked"] {
        entries.push(skill(&dir, name, "d"));
    }
    let tool = LoadSkill::new(std::slice::from_ref(&dir), &entries);
    for name in ["evil", "climbing", "linked"] {
        let err = message(tool.load(name).unwrap_err());
        assert!(
            err.starts_with(&format!("load_skill: the skill `{name}` cannot be read: ")),
            "{err}"
        );
        assert!(err.contains("leads outside its allowed root"), "{err}");
    }
    // A symlink beside a skill is neither listed nor followed.
    let answer = tool.load("debugging").unwrap();
    assert!(!answer.contains("secret"), "{answer}");
}

/// A skills directory that is itself reached through a symlink still works: it is resolved
/// once, when the tool is made.
#[test]
fn a_skills_directory_behind_a_symlink_is_read() {
    let (temp, dir, _) = setup();
    let link = temp.path().join("link");
    symlink(&dir, &link).unwrap();
    let tool = LoadSkill::new(
        std::slice::from_ref(&link),
        &[skill(&link, "debugging", "Debug a failed Nextflow run")],
    );
    assert!(
        tool.load("debugging")
            .unwrap()
            .contains("Look in the work directory first.")
    );
}

#[test]
fn a_skill_switched_off_is_not_loaded() {
    let (_temp, dir, entries) = setup();
    let tool = LoadSkill::new(&[dir], &entries)
        .with_switch(std::sync::Arc::new(|name: &str| name != "debugging"));
    assert_eq!(
        message(tool.load("debugging").unwrap_err()),
        "load_skill: the skill `debugging` is switched off; only the user can switch it on"
    );
    assert!(tool.load("nf-core-modules").is_ok());
}

/// A skill folder holding many files lists the first hundred and says there are more.
#[test]
fn a_crowded_skill_folder_lists_the_first_hundred() {
    let (_temp, dir, entries) = setup();
    for n in 0..150 {
        write(&dir.join(format!("nf-core-modules/data/{n:03}.txt")), "x");
    }
    let tool = LoadSkill::new(std::slice::from_ref(&dir), &entries);
    let answer = tool.load("nf-core-modules").unwrap();
    let mut lines = answer.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .ends_with("; more than 100 files beside it, to read with read_file:"),
        "{answer}"
    );
    let listed: Vec<&str> = lines.take_while(|l| l.starts_with("- ")).collect();
    assert_eq!(listed.len(), 100);
    assert!(listed[0].contains("data/000.txt"), "{}", listed[0]);
    assert!(listed[99].contains("data/099.txt"), "{}", listed[99]);
}
