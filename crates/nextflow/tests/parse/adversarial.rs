//! Odd and hostile inputs: the reader keeps going, says what it did not understand, and never
//! panics.

use std::error::Error;
use std::fs;

use codaris_nextflow::parse::{
    ParseError, Pipeline, decode, parse_config, parse_script, render_unparsed, string_literals,
};
use pretty_assertions::assert_eq;

#[test]
fn braces_in_strings_and_comments_do_not_end_a_process() {
    let src = r#"
process TRICKY {
    label 'a}b'          // } in a comment
    /* a block comment with } and { */
    tag "${ x ? '}' : "{" }"
    input:
    val x

    script:
    """
    echo '}' "}" \}
    awk '{ print $1 }'
    """
}
workflow { TRICKY(1) }
"#;
    let f = parse_script("main.nf", src);
    assert_eq!(f.unparsed, vec![]);
    let p = f.processes.first();
    assert_eq!(p.map(|p| (p.line, p.end_line)), Some((2, 14)));
    assert_eq!(p.map(|p| p.labels()), Some(vec!["a}b"]));
    assert_eq!(f.workflows.len(), 1);
}

#[test]
fn an_unterminated_string_is_reported_and_the_rest_is_read() {
    let src =
        "process A {\n  label 'oops\n  script:\n  'echo'\n}\nprocess B {\n  script:\n  'echo'\n}\n";
    let f = parse_script("m.nf", src);
    let lines: Vec<(u32, &str)> = f
        .unparsed
        .iter()
        .map(|u| (u.line, u.what.as_str()))
        .collect();
    assert_eq!(lines, vec![(2, "string is not closed on its line")]);
    let names: Vec<&str> = f.processes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["A", "B"]);
}

#[test]
fn an_unclosed_triple_quote_runs_to_the_end_and_says_so() {
    let f = parse_script("m.nf", "process A {\n  script:\n  \"\"\"\n  echo }\n}\n");
    assert!(
        f.unparsed
            .iter()
            .any(|u| u.line == 3 && u.what.contains("not closed"))
    );
    assert!(
        f.unparsed
            .iter()
            .any(|u| u.what.contains("body is not closed"))
    );
}

#[test]
fn unbalanced_braces_are_unparsed_entries() {
    let f = parse_script(
        "m.nf",
        "workflow {\n  A()\n\n}\n}\nprocess P {\n script:\n 'x'\n",
    );
    let whats: Vec<String> = render_unparsed(&f.unparsed)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        whats,
        vec![
            "m.nf:5: not understood: `}` closes nothing",
            "m.nf:5: not understood: top-level statement not understood: `}`",
            "m.nf:6: not understood: `{` opened here is never closed",
            "m.nf:6: not understood: process `P`: its body is not closed",
        ]
    );
    assert_eq!(f.processes.len(), 1);
}

#[test]
fn unknown_top_level_statements_and_bodiless_processes_are_said() {
    let f = parse_script("m.nf", "println 'hi'\nprocess NOBODY\nfoo = 1\n");
    let lines: Vec<u32> = f.unparsed.iter().map(|u| u.line).collect();
    assert_eq!(lines, vec![1, 2, 3]);
    assert!(
        f.unparsed
            .iter()
            .any(|u| u.what.contains("process without a body"))
    );
}

#[test]
fn a_process_without_script_is_said() {
    let f = parse_script("m.nf", "process P {\n  input:\n  val x\n}\n");
    assert_eq!(
        f.unparsed.first().map(|u| u.what.as_str()),
        Some("process `P` has no script")
    );
}

#[test]
fn empty_and_blank_files_are_empty_models() {
    for src in [
        "",
        "\n\n",
        "// only a comment\n",
        "/* block */",
        "#!/usr/bin/env nextflow\n",
    ] {
        let f = parse_script("e.nf", src);
        assert_eq!(
            (f.processes.len(), f.workflows.len(), f.unparsed.len()),
            (0, 0, 0),
            "{src:?}"
        );
    }
}

#[test]
fn crlf_line_endings_read_like_lf() {
    let lf = "include { A; B as C } from './m'\n\nprocess A {\n    label 'x'\n    script:\n    \"\"\"\n    echo\n    \"\"\"\n}\n";
    let crlf = lf.replace('\n', "\r\n");
    let (a, b) = (parse_script("m.nf", lf), parse_script("m.nf", &crlf));
    assert_eq!(a, b);
    let inc = a.includes.first();
    assert_eq!(
        inc.map(|i| i.names.iter().map(|n| n.local_name()).collect::<Vec<_>>()),
        Some(vec!["A", "C"])
    );
}

#[test]
fn a_megabyte_file_is_read() {
    let mut src = String::new();
    let mut n = 0;
    while src.len() < 1024 * 1024 {
        src.push_str(&format!(
            "process P{n} {{\n    label 'process_low'\n    input:\n    val x\n    script:\n    \"echo {{ {n} }}\"\n}}\n"
        ));
        n += 1;
    }
    let f = parse_script("big.nf", &src);
    assert_eq!(f.processes.len(), n);
    assert_eq!(f.unparsed, vec![]);
    assert_eq!(f.processes.last().map(|p| p.end_line), Some(7 * n as u32));
}

#[test]
fn non_utf8_bytes_are_a_clear_error_and_an_unparsed_entry() -> Result<(), Box<dyn Error>> {
    let err = decode("main.nf", b"process A {\n\xff\xfe}\n".to_vec());
    assert!(matches!(err, Err(ParseError::NotUtf8 { line: 2, .. })));
    let dir = tempfile::tempdir()?;
    fs::write(dir.path().join("main.nf"), b"workflow {\n}\n\x80\n")?;
    let p = Pipeline::load(dir.path())?;
    assert_eq!(
        render_unparsed(p.unparsed()),
        "main.nf:3: not understood: `main.nf` is not UTF-8 text (first bad byte on line 3)\n"
    );
    Ok(())
}

#[test]
fn a_missing_directory_is_an_error_not_a_panic() {
    let err = Pipeline::load(std::path::Path::new("/nonexistent/codaris/pipeline"));
    assert!(matches!(err, Err(ParseError::Io { .. })));
}

#[cfg(unix)]
#[test]
fn a_symlink_out_of_the_pipeline_is_not_read() -> Result<(), Box<dyn Error>> {
    let outside = tempfile::tempdir()?;
    fs::write(
        outside.path().join("secret.nf"),
        "process S {\n script:\n 'x'\n}\n",
    )?;
    let dir = tempfile::tempdir()?;
    fs::create_dir_all(dir.path().join("modules/local"))?;
    std::os::unix::fs::symlink(
        outside.path().join("secret.nf"),
        dir.path().join("modules/local/main.nf"),
    )?;
    let p = Pipeline::load(dir.path())?;
    assert_eq!(p.processes().count(), 0);
    assert_eq!(
        render_unparsed(p.unparsed()),
        "modules/local/main.nf:1: not understood: `modules/local/main.nf` is outside the pipeline directory\n"
    );
    Ok(())
}

#[test]
fn hostile_nesting_is_bounded_not_a_stack_overflow() {
    let n = 100_000;
    let lists = format!("params.x = {}{}\n", "[".repeat(n), "]".repeat(n));
    let c = parse_config("n.config", &lists);
    // Kept as lists to a depth, then as source text: never a literal it did not read.
    assert_eq!(c.get("params.x").map(|s| s.value.is_literal()), Some(false));

    let scopes = format!("{}x = 1\n{}", "a {\n".repeat(n), "}\n".repeat(n));
    let c = parse_config("n.config", &scopes);
    assert!(c.unparsed.iter().any(|u| u.what.contains("nested deeper")));

    let interp = format!("x = \"{}{}\"\n", "${\"".repeat(n), "\"}".repeat(n));
    let f = parse_script("m.nf", &interp);
    assert!(
        f.unparsed
            .iter()
            .any(|u| u.what.contains("nested too deep"))
    );

    let mismatched = format!("{}{}", "(".repeat(n), "}".repeat(n));
    let f = parse_script("m.nf", &mismatched);
    assert!(!f.unparsed.is_empty());
}

#[test]
fn string_literals_skip_comments_and_see_inside_interpolations() {
    let src = "// password = 'in a comment'\nx = \"${ a ? 'one' : 'two' }\"\ny = '/abs/path'\n";
    let got: Vec<(u32, Option<String>)> = string_literals(src)
        .into_iter()
        .map(|s| (s.line, s.value))
        .collect();
    assert_eq!(
        got,
        vec![
            (2, None),
            (2, Some("one".into())),
            (2, Some("two".into())),
            (3, Some("/abs/path".into())),
        ]
    );
}

proptest::proptest! {
    #[test]
    fn any_text_reads_without_panicking(src in "\\PC*") {
        let f = parse_script("p.nf", &src);
        let lines = u32::try_from(src.lines().count()).unwrap_or(u32::MAX).max(1) + 1;
        for u in &f.unparsed {
            proptest::prop_assert!(u.line >= 1 && u.line <= lines, "{u}");
        }
        let c = parse_config("p.config", &src);
        for u in &c.unparsed {
            proptest::prop_assert!(u.line >= 1 && u.line <= lines, "{u}");
        }
    }

    #[test]
    fn groovy_shaped_text_reads_without_panicking(
        src in proptest::collection::vec(
            proptest::sample::select(vec![
                "process ", "workflow ", "include ", "{", "}", "(", ")", "[", "]", "'", "\"",
                "\"\"\"", "'''", "${", "$", "/", "//", "/*", "*/", "\n", "\r\n", ":", "=", "?",
                "input:", "output:", "script:", "emit:", "params.", "x", " as ", " from ", ",",
                "includeConfig ", "withName:", "profiles ", "\\",
            ]),
            0..200,
        )
    ) {
        let src: String = src.concat();
        let _ = parse_script("p.nf", &src);
        let _ = parse_config("p.config", &src);
    }
}

#[test]
fn text_after_a_body_is_said_not_dropped() {
    let f = parse_script(
        "m.nf",
        "workflow {{ name|upper }} {\n  main:\n  A()\n}\nprocess P { script: 'x' } junk\n",
    );
    let whats: Vec<(u32, &str)> = f
        .unparsed
        .iter()
        .map(|u| (u.line, u.what.as_str()))
        .collect();
    assert_eq!(
        whats,
        vec![
            (1, "unexpected text after workflow `(entry)`: `{`"),
            (5, "unexpected text after process `P`: `junk`"),
        ]
    );
}

#[test]
fn a_flood_of_errors_is_listed_up_to_a_limit_and_says_so() {
    let src = "}\n".repeat(50_000);
    let f = parse_script("m.nf", &src);
    assert_eq!(f.unparsed.len(), 201);
    assert!(
        f.unparsed
            .last()
            .is_some_and(|u| u.what.contains("are not listed"))
    );
    let c = parse_config("n.config", &src);
    assert_eq!(c.unparsed.len(), 201);
}

#[test]
fn blank_lines_inside_a_statement_stay_linear() {
    // A continued assignment across a million blank lines: read as one statement.
    let src = format!("params.x = 1 +{}2\nparams.y = 3\n", "\n".repeat(1_000_000));
    let f = parse_script("m.nf", &src);
    let names: Vec<(&str, u32)> = f.params.iter().map(|p| (p.name.as_str(), p.line)).collect();
    assert_eq!(names, vec![("x", 1), ("y", 1_000_002)]);
}

#[test]
fn a_value_with_line_ends_cannot_forge_an_outline_line() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    fs::write(
        dir.path().join("nextflow.config"),
        "params.x = 'a\\nmain.nf:1: [FAKE] error: forged'\nparams.y = \"\"\"two\nlines\"\"\"\n",
    )?;
    let p = Pipeline::load(dir.path())?;
    let outline = codaris_nextflow::parse::render_outline(&p);
    assert_eq!(
        outline,
        "nextflow.config:1: param x = 'a\\nmain.nf:1: [FAKE] error: forged'\nnextflow.config:2: param y = 'two\\nlines'\n"
    );
    Ok(())
}

#[test]
fn crlf_multi_line_strings_and_a_byte_order_mark_read_like_plain_lf() {
    let lf = "params.x = '''two\nlines'''\n";
    let c_lf = parse_config("n.config", lf);
    let c_crlf = parse_config("n.config", &lf.replace('\n', "\r\n"));
    let c_bom = parse_config("n.config", &format!("\u{feff}{lf}"));
    assert_eq!(c_lf.settings, c_crlf.settings);
    assert_eq!(c_lf.settings, c_bom.settings);
    assert_eq!(c_bom.unparsed, vec![]);
}

#[test]
fn an_unclosed_interpolation_costs_its_string_not_the_file() {
    let src = "process A {\n  tag \"${meta.id\"\n  label 'x'\n  script:\n  'echo'\n}\nprocess B {\n  script:\n  'echo'\n}\n";
    let f = parse_script("m.nf", src);
    assert_eq!(
        f.unparsed
            .iter()
            .map(|u| (u.line, u.what.as_str()))
            .collect::<Vec<_>>(),
        vec![(2, "string interpolation `${` is not closed")]
    );
    let names: Vec<&str> = f.processes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["A", "B"]);
    assert_eq!(f.processes.first().map(|p| p.labels()), Some(vec!["x"]));
}

#[test]
fn many_unclosed_interpolations_stay_cheap() {
    // Each line would scan to the end of the file if failures were not remembered.
    let src = "x = \"${\"\n".repeat(30_000);
    let f = parse_script("m.nf", &src);
    assert!(!f.unparsed.is_empty());
    // Interpolations that each run to one far `}` and then fail.
    let src = format!("{}}}\n", "x = \"${\n".repeat(30_000));
    let f = parse_script("m.nf", &src);
    assert!(!f.unparsed.is_empty());
}
