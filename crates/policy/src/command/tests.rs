use super::{prefix_words, simple_commands, starts_with_words};
use pretty_assertions::assert_eq;

fn words(line: &str) -> Option<Vec<Vec<&'static str>>> {
    simple_commands(line).map(|commands| {
        commands
            .into_iter()
            .map(|c| {
                c.into_iter()
                    .map(|w| &*Box::leak(w.into_boxed_str()))
                    .collect()
            })
            .collect()
    })
}

#[test]
fn lists_and_pipelines_split_into_simple_commands() {
    assert_eq!(
        words("cargo test -p x && git status; ls | wc -l || echo no"),
        Some(vec![
            vec!["cargo", "test", "-p", "x"],
            vec!["git", "status"],
            vec!["ls"],
            vec!["wc", "-l"],
            vec!["echo", "no"],
        ])
    );
    assert_eq!(
        words("git log\ngit diff;"),
        Some(vec![vec!["git", "log"], vec!["git", "diff"]])
    );
}

#[test]
fn quotes_and_escapes_are_removed_and_do_not_split() {
    assert_eq!(
        words(r#"grep -r 'a; b && c' "x | y" a\ b"#),
        Some(vec![vec!["grep", "-r", "a; b && c", "x | y", "a b"]])
    );
    assert_eq!(
        words(r#"echo "say \"hi\" \$HOME" '' x"#),
        Some(vec![vec!["echo", "say \"hi\" $HOME", "", "x"]])
    );
    assert_eq!(
        words("find . -name '*.rs' -exec wc {} \\;"),
        Some(vec![vec![
            "find", ".", "-name", "*.rs", "-exec", "wc", "{}", ";"
        ]])
    );
}

#[test]
fn harmless_redirections_are_accepted() {
    assert_eq!(
        words("cargo test 2>&1 | tail -n 5"),
        Some(vec![vec!["cargo", "test"], vec!["tail", "-n", "5"]])
    );
    assert_eq!(
        words("make >/dev/null 2> /dev/null"),
        Some(vec![vec!["make"]])
    );
    assert_eq!(words("echo hi>/dev/null"), Some(vec![vec!["echo", "hi"]]));
}

#[test]
fn anything_a_prefix_cannot_vouch_for_is_unreadable() {
    for line in [
        "echo $(rm -rf ~)",
        "echo `rm -rf ~`",
        "echo \"$(id)\"",
        "echo \"`id`\"",
        "cat <(curl x)",
        "(rm -rf /)",
        "sleep 10 &",
        "cargo test > out.txt",
        "cargo test >> /tmp/log",
        "cat < secret",
        "cat <<EOF",
        "PATH=/tmp/evil cargo test",
        "LD_PRELOAD=x.so ls",
        "# comment",
        "echo 'unterminated",
        "echo \"unterminated",
        "echo trailing\\",
        "ls |& cat",
        "cargo test 2>&",
        "",
        " ; ;",
    ] {
        assert_eq!(words(line), None, "{line:?} must be unreadable");
    }
}

#[test]
fn assignments_only_matter_in_program_position() {
    assert_eq!(
        words("cargo build --features=x a=b"),
        Some(vec![vec!["cargo", "build", "--features=x", "a=b"]])
    );
    assert_eq!(words("echo x; A=1 rm y"), None);
    assert_eq!(words("echo a#b"), Some(vec![vec!["echo", "a#b"]]));
}

#[test]
fn prefixes_are_one_simple_command_matched_word_by_word() {
    let prefix = prefix_words("git status").unwrap_or_default();
    let line = |l: &str| {
        simple_commands(l)
            .and_then(|mut c| c.pop())
            .unwrap_or_default()
    };
    assert!(starts_with_words(&line("git status -s"), &prefix));
    assert!(starts_with_words(&line("git 'status'"), &prefix));
    assert!(!starts_with_words(&line("git statusx"), &prefix));
    assert!(!starts_with_words(&line("git"), &prefix));
    assert!(!starts_with_words(&line("/usr/bin/git status"), &prefix));
    assert!(!starts_with_words(&line("git status"), &[]));
    assert_eq!(prefix_words("git status; rm x"), None);
    assert_eq!(prefix_words("  "), None);
}
