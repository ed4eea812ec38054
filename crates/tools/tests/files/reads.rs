//! The tools that only read: read_file, keep_result, glob, grep, print_tree.

use super::*;

mod read_file {
    use super::*;

    #[tokio::test]
    async fn text_with_ranges() {
        let env = env();
        env.write("a.txt", "one\ntwo\nthree\n");
        let out = ok(&files::ReadFile, &env, json!({"path": "a.txt"})).await;
        assert_eq!(out, "     1\tone\n     2\ttwo\n     3\tthree\n");
        let out = ok(
            &files::ReadFile,
            &env,
            json!({"path": "a.txt", "offset": 2, "limit": 1}),
        )
        .await;
        assert_eq!(out, "     2\ttwo\n[lines 2-2 of 3]");
    }

    #[tokio::test]
    async fn encodings_are_converted() {
        let env = env();
        env.write("u16.txt", b"\xff\xfeh\0\xe9\0\n\0");
        let out = ok(&files::ReadFile, &env, json!({"path": "u16.txt"})).await;
        assert_eq!(out, "[converted from UTF-16LE to UTF-8]\n     1\thé\n");
        env.write("latin.txt", b"caf\xe9\n");
        let out = ok(&files::ReadFile, &env, json!({"path": "latin.txt"})).await;
        assert!(out.ends_with("     1\tcafé\n"), "{out}");
    }

    #[tokio::test]
    async fn directories_are_listed() {
        let env = env();
        env.write("d/x.txt", "");
        env.write("d/sub/y.txt", "");
        env.write("d/.hidden", "");
        let out = ok(&files::ReadFile, &env, json!({"path": "d"})).await;
        assert_eq!(out, "d/\nsub/\nx.txt\n");
        let out = ok(
            &files::ReadFile,
            &env,
            json!({"path": "d", "recursive": true, "show_hidden": true}),
        )
        .await;
        assert_eq!(out, "d/\n.hidden\nsub/\nsub/y.txt\nx.txt\n");
    }

    #[tokio::test]
    async fn pictures_by_content() {
        let env = env();
        env.write("pic.dat", png(10, 20));
        let out = call(&files::ReadFile, &env, json!({"path": "pic.dat"}))
            .await
            .unwrap();
        assert_eq!(
            out.content[1],
            Content::Image {
                media_type: "image/png".into(),
                data: png(10, 20)
            }
        );
        assert!(text(&out).contains("10x20"));
        env.write("huge.png", png(9000, 10));
        let err = model_err(&files::ReadFile, &env, json!({"path": "huge.png"})).await;
        assert!(err.contains("9000x10") && err.contains("8000"), "{err}");
        let err = model_err(
            &files::ReadFile,
            &env,
            json!({"path": "pic.dat", "offset": 2}),
        )
        .await;
        assert!(err.contains("read it whole"), "{err}");
        let mut big = png(10, 10);
        big.resize(4 * 1024 * 1024, 0);
        env.write("big.png", big);
        let err = model_err(&files::ReadFile, &env, json!({"path": "big.png"})).await;
        assert!(err.contains("4.0 MB"), "{err}");
    }

    #[tokio::test]
    async fn jpeg_and_webp_sizes_from_headers() {
        let env = env();
        // SOI, then a baseline SOF0 frame header: precision 8, height 30, width 40.
        let jpeg = b"\xff\xd8\xff\xc0\x00\x11\x08\x00\x1e\x00\x28\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01\xff\xd9";
        env.write("photo", jpeg);
        let out = call(&files::ReadFile, &env, json!({"path": "photo"}))
            .await
            .unwrap();
        assert_eq!(text(&out), "`photo`: image/jpeg, 40x30");
        // RIFF/WEBP with a VP8X chunk: canvas 9000x2 (stored minus one, 24-bit little endian).
        let mut webp = b"RIFF\x1e\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
        webp.extend([0x27, 0x23, 0x00, 0x01, 0x00, 0x00]);
        env.write("wide.webp", &webp);
        let err = model_err(&files::ReadFile, &env, json!({"path": "wide.webp"})).await;
        assert!(err.contains("9000x2"), "{err}");
    }

    #[tokio::test]
    async fn gif_first_frame() {
        let env = env();
        env.write("one.gif", gif(1));
        let out = call(&files::ReadFile, &env, json!({"path": "one.gif"}))
            .await
            .unwrap();
        assert_eq!(
            out.content[1],
            Content::Image {
                media_type: "image/gif".into(),
                data: gif(1)
            }
        );
        env.write("three.gif", gif(3));
        let out = call(&files::ReadFile, &env, json!({"path": "three.gif"}))
            .await
            .unwrap();
        assert_eq!(
            out.content[1],
            Content::Image {
                media_type: "image/gif".into(),
                data: gif(1)
            }
        );
        assert!(text(&out).contains("first of 3 frames"));
    }

    #[tokio::test]
    async fn binaries_and_errors() {
        let env = env();
        env.write("doc.pdf", b"%PDF-1.7\n\0\0\0");
        let err = model_err(&files::ReadFile, &env, json!({"path": "doc.pdf"})).await;
        assert!(
            err.contains("PDF document") && err.contains("12 bytes"),
            "{err}"
        );
        let fifo = std::process::Command::new("mkfifo")
            .arg(env.root.join("pipe"))
            .status()
            .unwrap();
        assert!(fifo.success());
        let err = model_err(&files::ReadFile, &env, json!({"path": "pipe"})).await;
        assert!(err.contains("not a regular file"), "{err}");
        let err = model_err(&files::ReadFile, &env, json!({"path": "missing.txt"})).await;
        assert!(err.contains("does not exist"), "{err}");
        let err = model_err(&files::ReadFile, &env, json!({})).await;
        assert!(err.contains("`path` is required"), "{err}");
        let err = model_err(&files::ReadFile, &env, json!({"path": "/etc/passwd"})).await;
        assert!(err.contains("outside every allowed root"), "{err}");
    }
}

#[tokio::test]
async fn keep_result_checks_its_mark() {
    let env = env();
    env.write("a.txt", "x\n");
    let out = ok(
        &files::KeepResult,
        &env,
        json!({"path": "a.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        out,
        "kept: `a.txt` lines 3-4 stays in context when older results are evicted"
    );
    let out = ok(&files::KeepResult, &env, json!({"pattern": "fn main"})).await;
    assert_eq!(
        out,
        "kept: grep `fn main` stays in context when older results are evicted"
    );
    let err = model_err(&files::KeepResult, &env, json!({})).await;
    assert!(err.contains("give the `path`"), "{err}");
    let err = model_err(&files::KeepResult, &env, json!({"path": "gone.txt"})).await;
    assert!(err.contains("does not exist"), "{err}");
    assert_eq!(files::file_tools().len(), 13);
}

/// Each file tool is the catalogue's: same name, and every path argument the policy checks is
/// one the tool reads, required exactly when the policy requires it.
#[test]
fn tools_match_the_policy_catalogue() {
    for tool in files::file_tools() {
        let Some(spec) = codaris_policy::builtin(tool.name()) else {
            unreachable!("{} is not in the catalogue", tool.name())
        };
        let schema = tool.schema();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for arg in spec.paths.iter() {
            let name: &str = &arg.name;
            assert!(
                schema["properties"].get(name).is_some(),
                "{}: no `{name}` in the schema",
                tool.name()
            );
            assert_eq!(
                required.contains(&name),
                arg.default == codaris_policy::PathDefault::Required,
                "{}: `{name}` required?",
                tool.name()
            );
        }
        assert!(
            tool.description().len() < 400,
            "{}: description too long",
            tool.name()
        );
    }
}

mod search {
    use super::*;

    #[tokio::test]
    async fn glob_newest_first_capped_and_ignoring() {
        let env = env();
        let now = SystemTime::now();
        for (i, name) in ["a.rs", "src/b.rs", "src/deep/c.rs"].iter().enumerate() {
            let path = env.write(name, "");
            let file = fs::File::options().write(true).open(path).unwrap();
            file.set_modified(now - Duration::from_secs(100 * (3 - i as u64)))
                .unwrap();
        }
        env.write("ignored/d.rs", "");
        env.write(".gitignore", "ignored/\n");
        env.write("notes.txt", "");
        let out = ok(&files::Glob, &env, json!({"pattern": "*.rs"})).await;
        assert_eq!(out, "src/deep/c.rs\nsrc/b.rs\na.rs");
        let out = ok(&files::Glob, &env, json!({"pattern": "src/*.rs"})).await;
        assert_eq!(out, "src/b.rs");
        let out = ok(
            &files::Glob,
            &env,
            json!({"pattern": "*.rs", "path": "src/deep"}),
        )
        .await;
        assert_eq!(out, "src/deep/c.rs");
        for i in 0..120 {
            env.write(&format!("many/{i}.md"), "");
        }
        let out = ok(&files::Glob, &env, json!({"pattern": "**/*.md"})).await;
        assert_eq!(out.lines().count(), 101);
        assert!(out.ends_with("[100 newest of 120 files; narrow the pattern to see others]"));
        env.write(".github/ci.yml", "");
        let out = ok(&files::Glob, &env, json!({"pattern": "*.yml"})).await;
        assert_eq!(out, "no files match `*.yml`");
        let out = ok(&files::Glob, &env, json!({"pattern": ".github/*.yml"})).await;
        assert_eq!(out, ".github/ci.yml");
        let out = ok(
            &files::Glob,
            &env,
            json!({"pattern": "*.rs", "path": "a.rs"}),
        )
        .await;
        assert_eq!(out, "a.rs");
        let out = ok(&files::Glob, &env, json!({"pattern": "*.none"})).await;
        assert_eq!(out, "no files match `*.none`");
        let err = model_err(&files::Glob, &env, json!({"pattern": "a[", "path": "."})).await;
        assert!(err.contains("bad pattern"), "{err}");
    }

    #[tokio::test]
    async fn grep_regex_glob_case_and_limit() {
        let env = env();
        env.write("a.py", "def Foo():\n    return 1\n");
        env.write("b.txt", "foo bar\nnothing\nfoo again\n");
        env.write("skip/c.py", "def foo(): pass\n");
        env.write(".gitignore", "skip/\n");
        env.write("bin.dat", b"foo\0binary");
        let out = ok(&files::Grep, &env, json!({"pattern": "fo+"})).await;
        assert_eq!(out, "b.txt:1:foo bar\nb.txt:3:foo again");
        let out = ok(
            &files::Grep,
            &env,
            json!({"pattern": "foo", "case_sensitive": false, "glob": "*.py"}),
        )
        .await;
        assert_eq!(out, "a.py:1:def Foo():");
        let out = ok(
            &files::Grep,
            &env,
            json!({"pattern": "foo", "max_results": 1}),
        )
        .await;
        assert!(
            out.starts_with("b.txt:1:foo bar\n[stopped at 1 matches"),
            "{out}"
        );
        let out = ok(
            &files::Grep,
            &env,
            json!({"pattern": "again", "path": "b.txt"}),
        )
        .await;
        assert_eq!(out, "b.txt:3:foo again");
        // The root's .gitignore still counts when searching below it; one above the root is
        // never read.
        env.write("sub/.keep", "");
        env.write("sub/skip/d.py", "foo\n");
        let out = ok(&files::Grep, &env, json!({"pattern": "foo", "path": "sub"})).await;
        assert_eq!(out, "no matches for `foo`");
        fs::write(env.root.parent().unwrap().join(".gitignore"), "*.txt\n").unwrap();
        let out = ok(&files::Grep, &env, json!({"pattern": "again"})).await;
        assert_eq!(out, "b.txt:3:foo again");
        let out = ok(&files::Grep, &env, json!({"pattern": "zzz"})).await;
        assert_eq!(out, "no matches for `zzz`");
        let err = model_err(&files::Grep, &env, json!({"pattern": "("})).await;
        assert!(err.contains("bad regular expression"), "{err}");
    }

    #[tokio::test]
    async fn print_tree_depth() {
        let env = env();
        env.write("a/b/c/d.txt", "");
        env.write("a/x.txt", "");
        let out = ok(&files::PrintTree, &env, json!({"path": "a", "depth": 2})).await;
        assert_eq!(
            out,
            "a\n├── b/\n│   └── c/\n└── x.txt\n\n2 directories, 1 files"
        );
        let err = model_err(&files::PrintTree, &env, json!({"path": "a/x.txt"})).await;
        assert!(err.contains("is not a directory"), "{err}");
    }
}
