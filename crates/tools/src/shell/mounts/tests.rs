//! The mount namespace's tests: the walk, the plan, and real children applying it.

#![cfg(test)]

use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn git_is_found_at_any_depth_in_any_case_without_descending_into_it() -> TestResult {
    let temp = tempfile::tempdir()?;
    let root = temp.path().canonicalize()?;
    for dir in [".git/modules/x/.git", "sub/lib/.git", "a/.GIT", "b/c/d"] {
        std::fs::create_dir_all(root.join(dir))?;
    }
    std::fs::write(root.join("b/.Git"), "gitdir: ../.git/modules/b\n")?;
    let found = find_git(std::slice::from_ref(&root), &[]);
    let mut paths: Vec<PathBuf> = found
        .iter()
        .map(|target| target.path().strip_prefix(&root).map(Path::to_path_buf))
        .collect::<Result<_, _>>()?;
    paths.sort();
    let expected: Vec<PathBuf> = [".git", "a/.GIT", "b/.Git", "sub/lib/.git"]
        .iter()
        .map(PathBuf::from)
        .collect();
    assert_eq!(paths, expected);
    Ok(())
}

#[test]
fn what_an_earlier_walk_found_stays_while_it_exists() -> TestResult {
    let temp = tempfile::tempdir()?;
    let root = temp.path().canonicalize()?;
    std::fs::create_dir_all(root.join("deep/.git"))?;
    let earlier = vec![
        Target::new(&root.join("deep/.git"), Action::ReadOnly(0)).ok_or("path")?,
        Target::new(&root.join("gone/.git"), Action::ReadOnly(0)).ok_or("path")?,
    ];
    // A walk that saw nothing (as one stopped at its limit would).
    let found = find_git(&[root.join("missing")], &earlier);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path(), root.join("deep/.git"));
    Ok(())
}

#[test]
fn the_list_is_walked_again_once_a_command_ended() -> TestResult {
    let temp = tempfile::tempdir()?;
    let root = temp.path().canonicalize()?;
    let roots = vec![root.clone()];
    let dirs = Arc::new(GitDirs::default());
    assert!(dirs.current(&roots).is_empty());
    std::fs::create_dir(root.join(".git"))?;
    assert!(
        dirs.current(&roots).is_empty(),
        "cached until a command ends"
    );
    // No runtime here: the walk happens at the next command.
    dirs.command_ended(roots.clone());
    assert_eq!(dirs.current(&roots).len(), 1);
    Ok(())
}

#[test]
fn bus_addresses_name_their_socket_paths() {
    assert_eq!(
        bus_paths("unix:path=/run/user/1000/bus,guid=1;unix:abstract=/tmp/x;tcp:host=h"),
        vec![PathBuf::from("/run/user/1000/bus")]
    );
}

/// Runs `script` in `root` in a child that applied `plan` (as a command's does).
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "the plan is applied between fork and exec")]
fn run_with(plan: MountPlan, root: &Path, script: &str) -> std::io::Result<bool> {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new("/bin/sh");
    command
        .args(["-c", script])
        .current_dir(root)
        .stderr(std::process::Stdio::null());
    // SAFETY: `apply` makes system calls on values built before the fork.
    unsafe {
        command.pre_exec(move || plan.apply());
    }
    Ok(command.status()?.success())
}

/// Both ways in: directly (root) and through a user namespace of one's own.
#[cfg(target_os = "linux")]
#[test]
fn in_the_childs_namespace_git_is_read_only_and_the_rest_writable() -> TestResult {
    let temp = tempfile::tempdir()?;
    let root = temp.path().canonicalize()?;
    std::fs::create_dir_all(root.join("sub/.GIT/hooks"))?;
    std::fs::create_dir_all(root.join(".git/hooks"))?;
    let git: Arc<[Target]> = find_git(std::slice::from_ref(&root), &[]).into();
    let direct = !needs_user_namespace();
    for user in [false, true] {
        if !user && !direct {
            continue;
        }
        let plan = MountPlan {
            user: user.then(id_maps),
            git: git.clone(),
            startup: Vec::new().into(),
            hidden: Vec::new().into(),
            secrets: Box::leak(Box::default()),
            cwd: CString::new(root.as_os_str().as_bytes())?,
        };
        if !run_with(plan.clone(), &root, "true")? {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the kernel refuses a mount namespace (user namespace: {user})"
            );
            eprintln!("SKIPPED: the kernel refuses a mount namespace (user: {user})");
            continue;
        }
        for write in [
            "touch .git/x",
            "echo x > .git/hooks/pre-commit",
            "cd sub/.GIT && touch y",
            "rm -r .git",
            "mv sub/.GIT sub/moved",
        ] {
            assert!(
                !run_with(plan.clone(), &root, write)?,
                "{write} (user: {user})"
            );
        }
        assert!(run_with(plan, &root, "touch z && rm z")?, "user: {user}");
        assert!(!root.join(".git/x").exists() && !root.join("sub/.GIT/y").exists());
        assert!(root.join(".git/hooks").is_dir() && root.join("sub/.GIT").is_dir());
    }
    Ok(())
}

/// A root of `$HOME`: the shell's and git's startup files there (a link followed to its
/// file) are read-only to commands, the rest of the root stays writable.
#[cfg(target_os = "linux")]
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test reads its own stand-in files back, outside any fence"
)]
fn startup_files_under_a_root_are_read_only() -> TestResult {
    let temp = tempfile::tempdir()?;
    let home = temp.path().canonicalize()?;
    std::fs::write(home.join(".bashrc"), "# mine\n")?;
    std::fs::create_dir(home.join("dotfiles"))?;
    std::fs::write(home.join("dotfiles/profile"), "# mine\n")?;
    std::os::unix::fs::symlink(home.join("dotfiles/profile"), home.join(".profile"))?;
    std::fs::create_dir(home.join("work"))?;
    let startup = startup_targets(&home);
    assert_eq!(
        startup.iter().map(Target::path).collect::<Vec<_>>(),
        vec![
            home.join(".bashrc").as_path(),
            home.join("dotfiles/profile").as_path()
        ]
    );
    let plan = MountPlan {
        user: needs_user_namespace().then(id_maps),
        git: Vec::new().into(),
        startup: startup.into(),
        hidden: Vec::new().into(),
        secrets: Box::leak(Box::default()),
        cwd: CString::new(home.as_os_str().as_bytes())?,
    };
    if !run_with(plan.clone(), &home, "true")? {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the kernel refuses a mount namespace"
        );
        eprintln!("SKIPPED: the kernel refuses a mount namespace");
        return Ok(());
    }
    for write in [
        "echo planted >> .bashrc",
        "echo planted >> .profile",
        "echo planted > dotfiles/profile",
        "rm .bashrc",
    ] {
        assert!(!run_with(plan.clone(), &home, write)?, "{write}");
    }
    assert!(run_with(plan, &home, "echo ok > work/x")?);
    assert_eq!(std::fs::read(home.join(".bashrc"))?, b"# mine\n");
    assert_eq!(std::fs::read(home.join("dotfiles/profile"))?, b"# mine\n");
    Ok(())
}

/// The machine's secrets, denied even to root once its capabilities are gone (as every
/// command's are, `privileges.rs`), while their neighbours and `/tmp` stay as they were.
#[cfg(target_os = "linux")]
#[test]
#[expect(unsafe_code, reason = "the plan is applied between fork and exec")]
#[expect(
    clippy::disallowed_methods,
    reason = "the test reads its own stand-in secret back, outside any fence"
)]
fn secrets_are_denied_to_a_command_without_capabilities() -> TestResult {
    use std::os::unix::process::CommandExt;
    let temp = tempfile::tempdir()?;
    let root = temp.path().canonicalize()?;
    std::fs::write(root.join("shadow"), "root:$6$hash")?;
    std::fs::create_dir(root.join("sudoers.d"))?;
    std::fs::write(root.join("sudoers.d/rule"), "ALL")?;
    std::fs::write(root.join("passwd"), "root:x:0:0")?;
    // Beneath /tmp like most test directories, so the scratch tmpfs must go elsewhere.
    let secrets = Secrets::new(&[
        root.join("shadow"),
        root.join("sudoers.d"),
        root.join("gone"),
    ]);
    assert!(secrets.scratch.is_some());
    let plan = MountPlan {
        user: needs_user_namespace().then(id_maps),
        git: Vec::new().into(),
        startup: Vec::new().into(),
        hidden: Vec::new().into(),
        secrets: Box::leak(Box::new(secrets)),
        cwd: CString::new(root.as_os_str().as_bytes())?,
    };
    let run = |script: &str| -> std::io::Result<std::process::Output> {
        let plan = plan.clone();
        let privileges = super::super::privileges::Privileges::of_daemon();
        let mut command = std::process::Command::new("/bin/sh");
        command.args(["-c", script]).current_dir(&root);
        // SAFETY: `apply` and the privileges' drop make system calls on values built
        // before the fork.
        unsafe {
            command.pre_exec(move || {
                plan.apply()?;
                privileges.apply()
            });
        }
        command.output()
    };
    let probe = run("true")?;
    if !probe.status.success() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the kernel refuses a mount namespace: {probe:?}"
        );
        eprintln!("SKIPPED: the kernel refuses a mount namespace");
        return Ok(());
    }
    for read in ["cat shadow", "ls sudoers.d", "cat sudoers.d/rule"] {
        let out = run(read)?;
        assert!(!out.status.success(), "{read}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "{read}: {out:?}"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("$6$"),
            "{read}"
        );
    }
    let out = run("cat passwd && ls -d /tmp && ! test -e /tmp/.codaris-denied")?;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("shadow"))?,
        "root:$6$hash"
    );
    Ok(())
}

#[cfg(target_os = "linux")]
#[test]
fn the_machines_shadow_file_is_among_the_secrets() {
    if Path::new("/etc/shadow").exists() {
        assert!(machine_secrets().targets.iter().any(|target| {
            target.path() == Path::new("/etc/shadow") && target.action == Action::DenyFile
        }));
    }
}

/// A daemon not run as root is non-dumpable (`keys.rs`), so its `/proc/self` files belong
/// to root; its commands must still get their user namespace (they were all refused).
/// Run as root here, the child turns itself into such a daemon first: non-dumpable, uid and
/// gid `nobody`.
#[cfg(target_os = "linux")]
#[test]
#[expect(unsafe_code, reason = "the plan is applied between fork and exec")]
fn a_non_dumpable_unprivileged_daemon_still_builds_the_namespace() -> TestResult {
    use rustix::process::{DumpableBehavior, Gid, Uid, set_dumpable_behavior};
    use std::os::unix::process::CommandExt;
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI runs as root"
        );
        eprintln!("SKIPPED: becoming `nobody` needs root");
        return Ok(());
    }
    let nobody = 65534;
    let plan = MountPlan {
        user: Some(Arc::new(IdMaps {
            uid_map: format!("{nobody} {nobody} 1\n").into_bytes(),
            gid_map: format!("{nobody} {nobody} 1\n").into_bytes(),
        })),
        git: Vec::new().into(),
        startup: Vec::new().into(),
        hidden: Vec::new().into(),
        secrets: machine_secrets(),
        cwd: CString::new("/")?,
    };
    let mut command = std::process::Command::new("/bin/true");
    command
        .current_dir("/")
        .stderr(std::process::Stdio::piped());
    // SAFETY: system calls only, on values built before the fork.
    unsafe {
        command.pre_exec(move || {
            set_dumpable_behavior(DumpableBehavior::NotDumpable)?;
            rustix::thread::set_thread_groups(&[])?;
            rustix::thread::set_thread_gid(Gid::from_raw(nobody))?;
            rustix::thread::set_thread_uid(Uid::from_raw(nobody))?;
            plan.apply()
        });
    }
    let out = command.output()?;
    assert!(out.status.success(), "{out:?}");
    Ok(())
}

#[cfg(target_os = "linux")]
#[test]
fn a_remount_keeps_the_locked_flags() {
    use rustix::fs::StatVfsMountFlags as S;
    use rustix::mount::MountFlags as M;
    let found = (S::RDONLY | S::NOSUID | S::NODEV | S::RELATIME).bits();
    assert_eq!(imp::kept(found), M::NOSUID | M::NODEV | M::RELATIME);
}
