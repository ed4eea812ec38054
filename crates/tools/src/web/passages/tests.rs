//! Sentence splitting, Markdown cleaning and scoring on text shaped like the pages
//! `web_research` reads.

use pretty_assertions::assert_eq;

use super::*;
use crate::web::markdown::html_to_markdown;

/// A documentation page as `webfetch`'s converter renders one.
const DOCS: &str = "# Caching and resuming\n\n\
One of the core features of Nextflow is the ability to cache task executions and re-use them \
in subsequent runs to minimize duplicate work. Resumability is useful both for recovering from \
errors and for iteratively developing a pipeline.\n\n\
## Task cache\n\n\
When a task is submitted, Nextflow computes a hash from the task inputs (e.g. the input files \
and the script) and uses it to check whether the task was already run. See the \
[`-resume`](https://nextflow.io/docs/latest/cli.html#run) option and **Fig. 2** for details.\n\n\
```groovy\nprocess FOO {\n    cache 'lenient'\n}\n```\n\n\
- The `cache` directive accepts `true`, `false`, `'deep'` and `'lenient'`.\n\
- Version 23.10.1 changed the default. It is documented in the changelog.\n\n\
| Mode | Meaning |\n|------|---------|\n| deep | content hash |\n\n\
![diagram](https://nextflow.io/img/cache.png)\n";

#[test]
fn sentences_end_at_full_stops_but_not_at_abbreviations_initials_or_decimals() {
    let text = "Nextflow hashes the inputs (e.g. files and scripts) first. Version 23.10.1 \
        changed it, as J. Smith et al. noted in Fig. 3 of the paper. Does it resume? \
        \"Yes,\" the docs say. lowercase after a stop. joins the sentence";
    assert_eq!(
        sentences(text),
        vec![
            "Nextflow hashes the inputs (e.g. files and scripts) first.",
            "Version 23.10.1 changed it, as J. Smith et al. noted in Fig. 3 of the paper.",
            "Does it resume?",
            "\"Yes,\" the docs say. lowercase after a stop. joins the sentence",
        ]
    );
    assert_eq!(sentences("   "), Vec::<String>::new());
    assert_eq!(sentences("No stop at the end"), vec!["No stop at the end"]);
}

#[test]
fn markdown_loses_headings_code_tables_and_inline_markup() {
    let split = paragraphs(DOCS, true);
    let flat: Vec<&str> = split.iter().flatten().map(String::as_str).collect();
    assert_eq!(
        flat,
        vec![
            "One of the core features of Nextflow is the ability to cache task executions and \
             re-use them in subsequent runs to minimize duplicate work.",
            "Resumability is useful both for recovering from errors and for iteratively \
             developing a pipeline.",
            "When a task is submitted, Nextflow computes a hash from the task inputs (e.g. the \
             input files and the script) and uses it to check whether the task was already run.",
            "See the -resume option and Fig. 2 for details.",
            "The cache directive accepts true, false, 'deep' and 'lenient'.",
            "Version 23.10.1 changed the default.",
            "It is documented in the changelog.",
        ]
    );
    // Paragraphs stay apart: the two list items are two paragraphs.
    assert_eq!(split.len(), 4);
}

#[test]
fn escaped_markdown_is_read_as_the_literal_text() {
    let page = html_to_markdown(
        "<main><p>Set <code>max_cpus</code> or params.max_memory to 2*4 GB; see \
         <a href='https://nf-co.re/docs'>the nf-core docs</a> [here].</p></main>",
    );
    let split = paragraphs(&page.markdown, true);
    assert_eq!(
        split,
        vec![vec![
            "Set max_cpus or params.max_memory to 2*4 GB; see the nf-core docs [here].".to_owned()
        ]]
    );
    // Plain text keeps its underscores and stars: it is not Markdown.
    assert_eq!(
        paragraphs("snake_case and *stars*\nwrapped\n\nsecond", false),
        vec![
            vec!["snake_case and *stars* wrapped".to_owned()],
            vec!["second".to_owned()]
        ]
    );
}

#[test]
fn stems_join_the_forms_of_a_word() {
    for (a, b) in [
        ("caching", "cache"),
        ("cached", "caches"),
        ("tasks", "task"),
        ("resumes", "resuming"),
        ("libraries", "library"),
        ("genes", "gene"),
    ] {
        assert_eq!(stem(a), stem(b), "{a} / {b}");
    }
    assert_eq!(stem("analysis"), "analysis");
    assert_eq!(stem("class"), "class");
    assert_eq!(
        terms("How does Nextflow resume cached tasks after a failure?"),
        vec!["nextflow", "resum", "cach", "task", "failur"]
    );
    // Only stopwords: they are all the question has, so they are its terms.
    assert_eq!(terms("what is it"), vec!["what", "is", "it"]);
}

#[test]
fn the_sentence_about_the_question_wins_and_a_shared_word_counts_little() {
    let other = "# Nextflow\n\nNextflow is a workflow system. Nextflow runs on clusters and in \
        the cloud with the same Nextflow script.\n\nNextflow was first released in 2013 by a \
        team at the CRG in Barcelona.";
    let sources = [
        Source {
            text: DOCS,
            markdown: true,
        },
        Source {
            text: other,
            markdown: true,
        },
    ];
    let picked = select(
        "How does Nextflow resume cached tasks after a failure?",
        &sources,
        3,
        2,
    );
    let claims: Vec<(usize, &str)> = picked
        .iter()
        .map(|p| (p.source, p.claim.as_str()))
        .collect();
    assert_eq!(
        claims,
        vec![
            (
                0,
                "One of the core features of Nextflow is the ability to cache task executions \
                 and re-use them in subsequent runs to minimize duplicate work."
            ),
            (
                0,
                "When a task is submitted, Nextflow computes a hash from the task inputs (e.g. \
                 the input files and the script) and uses it to check whether the task was \
                 already run."
            ),
        ],
        "{picked:#?}"
    );
    // The passage is the claim with its neighbours in the paragraph.
    assert_eq!(
        picked[0].passage,
        format!(
            "{} {}",
            picked[0].claim,
            "Resumability is useful both for recovering from \
            errors and for iteratively developing a pipeline."
        )
    );
    assert!(picked[0].score > picked[1].score);
    // Only "nextflow" in common: one term of five is not enough to rest a claim on.
    assert!(
        select(
            "How does Nextflow resume cached tasks?",
            &sources[1..],
            3,
            2
        )
        .is_empty()
    );
}

#[test]
fn the_cap_per_source_and_repeats_are_respected() {
    let page = "Salmon quantifies transcript abundance from RNA-seq reads quickly.\n\n\
        Salmon quantifies transcript abundance from RNA-seq reads very quickly.\n\n\
        Salmon also estimates transcript abundance with bias correction for RNA-seq.\n\n\
        Transcript abundance from RNA-seq can be summarised to genes with tximport.";
    let sources = [Source {
        text: page,
        markdown: false,
    }];
    let picked = select("salmon transcript abundance RNA-seq", &sources, 10, 2);
    assert_eq!(picked.len(), 2, "{picked:#?}");
    let repeats = picked
        .iter()
        .filter(|p| p.claim.starts_with("Salmon quantifies"))
        .count();
    assert_eq!(repeats, 1, "{picked:#?}");
    assert_eq!(select("transcript abundance", &sources, 10, 5).len(), 3);
    assert!(select("", &sources, 10, 5).is_empty());
}

#[test]
fn quotes_are_cut_at_a_word_boundary_with_an_ellipsis() {
    assert_eq!(quote("short enough", 40), "short enough");
    assert_eq!(
        quote("Nextflow computes a hash, from the task inputs", 27),
        "Nextflow computes a hash…"
    );
    let long_word = "x".repeat(50);
    assert_eq!(quote(&long_word, 10), format!("{}…", "x".repeat(10)));
    assert_eq!(quote("ünïcödé wörds hère", 10), "ünïcödé…");
}

#[test]
fn hostile_text_cannot_break_the_splitter() {
    let nasty = format!(
        "{}\n\n[unclosed link (http://x\n\n```\nnever closed fence\n\n\\\\\\*{}",
        "a.".repeat(5000),
        "]".repeat(100)
    );
    let split = paragraphs(&nasty, true);
    assert!(split.len() <= 3, "{}", split.len());
    let sources = [Source {
        text: &nasty,
        markdown: true,
    }];
    assert!(select("unclosed link", &sources, 5, 5).len() <= 1);
}

proptest::proptest! {
    /// Any text at all, Markdown or not, splits and scores without a panic, and what is picked
    /// is always the source's own words.
    #[test]
    fn any_text_is_split_and_scored_safely(text in "\\PC{0,400}", question in "\\PC{0,60}") {
        for markdown in [true, false] {
            let sources = [Source { text: &text, markdown }];
            for passage in select(&question, &sources, 5, 5) {
                let claim = passage.claim.trim_end_matches('…');
                let words: Vec<&str> = claim.split_whitespace().collect();
                proptest::prop_assert!(!words.is_empty());
                if !markdown {
                    // Plain text is quoted as written: every whole word is the text's (the last
                    // may have been cut).
                    let own: Vec<&str> = text.split_whitespace().collect();
                    let whole = &words[..words.len() - 1];
                    proptest::prop_assert!(whole.iter().all(|word| own.contains(word)));
                }
            }
        }
        let _ = quote(&text, 7);
        let _ = terms(&question);
    }
}
