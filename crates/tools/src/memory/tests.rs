//! Notes kept, read, found and refused where a path would leave its scope.
#![cfg(test)]
#![expect(
    clippy::disallowed_methods,
    reason = "the tests read back what a note became on disk, which no tool does"
)]

use std::path::PathBuf;

use super::*;

fn roots(temp: &tempfile::TempDir) -> Roots {
    let base = temp.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("config")).unwrap();
    std::fs::create_dir_all(base.join("proj")).unwrap();
    Roots {
        user: Some(base.join("config")),
        project: Some(base.join("proj")),
    }
}

#[test]
fn a_saved_note_is_listed_read_found_and_deleted() {
    let temp = tempfile::tempdir().unwrap();
    let roots = roots(&temp);
    let path = NotePath::note(Scope::Project, "cluster/slurm").unwrap();
    assert_eq!(path.to_string(), "project:cluster/slurm.md");
    assert!(
        !roots
            .save(&path, "Slurm", "Use the `long` queue for STAR.")
            .unwrap()
    );
    assert!(
        roots
            .save(
                &path,
                "Slurm queue",
                "Use the `long` queue for STAR alignments."
            )
            .unwrap()
    );
    let on_disk = std::fs::read_to_string(
        roots
            .folder(Scope::Project)
            .unwrap()
            .join("cluster/slurm.md"),
    )
    .unwrap();
    assert_eq!(
        on_disk,
        "# Slurm queue\n\nUse the `long` queue for STAR alignments.\n"
    );
    let user = NotePath::note(Scope::User, "style.md").unwrap();
    roots
        .save(&user, "Reviewer style", "Prefers nf-test snapshots.")
        .unwrap();

    let listing = roots.list(&NotePath::parse("project:").unwrap()).unwrap();
    assert_eq!(listing.folders, ["cluster"]);
    let note = roots
        .read(&NotePath::parse("project:cluster/slurm.md").unwrap())
        .unwrap();
    assert_eq!(note.title, "Slurm queue");
    let hits = roots
        .search("which queue for star alignment", &Scope::ALL, 5)
        .unwrap();
    assert_eq!(
        hits.first().map(|h| h.path.as_str()),
        Some("project:cluster/slurm.md")
    );
    let hits = roots
        .search("nf-test snapshots", &[Scope::User], 5)
        .unwrap();
    assert_eq!(hits.first().map(|h| h.path.as_str()), Some("user:style.md"));

    assert!(
        roots
            .delete(&NotePath::parse("project:cluster").unwrap())
            .unwrap()
    );
    assert!(matches!(
        roots.read(&path),
        Err(MemoryError::NotFound { .. })
    ));
    assert!(matches!(
        roots.delete(&NotePath::parse("project:").unwrap()),
        Err(MemoryError::BadPath(BadNotePath::Root { .. }))
    ));
}

#[test]
fn a_path_that_would_leave_its_scope_is_refused_before_anything_is_opened() {
    for bad in [
        "project:../x.md",
        "project:a/../../x.md",
        "user:/etc/passwd",
        "user:~/notes.md",
        "user:$HOME/x.md",
        "user:${HOME}/x.md",
        "project:file:///etc/passwd",
        "file:///etc/passwd",
        "/etc/passwd",
        "~/x.md",
        "project:.git/config",
        "project:a\\..\\x.md",
        "elsewhere:x.md",
    ] {
        assert!(NotePath::parse(bad).is_err(), "{bad}");
    }
    for bad in ["../x", "/abs", "~/x", "$HOME/x", "file:///x", "a/../../b"] {
        assert!(NotePath::note(Scope::User, bad).is_err(), "{bad}");
    }
    assert_eq!(
        NotePath::parse("project:./a/b.md").unwrap().rel,
        PathBuf::from("a/b.md")
    );
}

#[test]
fn a_symbolic_link_beneath_a_scope_or_as_its_folder_is_never_followed() {
    let temp = tempfile::tempdir().unwrap();
    let roots = roots(&temp);
    let outside = temp.path().canonicalize().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "# s\n\nsecret").unwrap();
    let folder = roots.folder(Scope::Project).unwrap();
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(&outside, folder.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), folder.join("note.md")).unwrap();
    for path in ["project:out/secret.md", "project:note.md"] {
        let path = NotePath::parse(path).unwrap();
        assert!(
            matches!(roots.read(&path), Err(MemoryError::Symlink { .. })),
            "{path}"
        );
    }
    let through = NotePath::note(Scope::Project, "out/new.md").unwrap();
    assert!(matches!(
        roots.save(&through, "t", "b"),
        Err(MemoryError::Symlink { .. })
    ));
    assert!(!outside.join("new.md").exists());
    assert!(matches!(
        roots.delete(&NotePath::parse("project:out").unwrap()),
        Err(MemoryError::Symlink { .. })
    ));
    assert!(outside.join("secret.md").exists());
    // A search does not walk through a link either.
    assert!(roots.search("secret", &Scope::ALL, 5).unwrap().is_empty());

    // The project's `.codaris` planted as a link: the scope itself is refused.
    let other = tempfile::tempdir().unwrap();
    let proj = other.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(&outside, proj.join(".codaris")).unwrap();
    let linked = Roots {
        user: None,
        project: Some(proj),
    };
    let path = NotePath::note(Scope::Project, "x.md").unwrap();
    assert!(matches!(
        linked.save(&path, "t", "b"),
        Err(MemoryError::Io { .. })
    ));
    assert!(!outside.join("memory").exists());
}
