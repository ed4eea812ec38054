//! The text `web_research` answers with. Its first line is a contract:
//! `Research brief: "<question>" — N sources`. Then the claims, each a quoted sentence ending
//! with its source's number; the sources, each with its title, address and the passages quoted
//! from it; what was skipped and why; the queries and what each engine made of them.
//!
//! Everything taken from outside (titles, sentences, reasons) is folded onto one line, so a page
//! cannot forge a line of the brief's own structure.

use std::collections::HashMap;

use super::engines::Outcome;
use super::literature::Article;
use super::passages::{self, Passage, Source};
use super::queries::Depth;
use super::research::{Consulted, Read, Searched, Skipped};

/// A title is cut to this many characters.
const TITLE_CHARS: usize = 160;

/// Everything one research call gathered.
#[derive(Debug)]
pub(crate) struct Gathered<'a> {
    pub(crate) question: &'a str,
    pub(crate) depth: Depth,
    pub(crate) searched: &'a [Searched],
    pub(crate) consulted: &'a Consulted,
    pub(crate) read: &'a [Read],
    pub(crate) skipped: Vec<Skipped>,
}

/// A numbered source as cited.
struct Cited {
    title: String,
    url: String,
    /// `(Journal, 2021)` for an article.
    note: String,
    passages: Vec<String>,
}

pub(crate) fn compose(gathered: &Gathered<'_>) -> String {
    let articles: &[Article] = match gathered.consulted {
        Consulted::Found(articles) => articles,
        _ => &[],
    };
    let sources: Vec<Source<'_>> = gathered
        .read
        .iter()
        .map(|page| Source {
            text: &page.text,
            markdown: page.markdown,
        })
        .chain(articles.iter().map(|article| Source {
            text: &article.passage,
            markdown: false,
        }))
        .collect();
    let (max, per_source) = gathered.depth.claims();
    let picked = passages::select(gathered.question, &sources, max, per_source);

    // Sources are numbered in the order the brief first cites them.
    let mut number: HashMap<usize, usize> = HashMap::new();
    let mut cited: Vec<Cited> = Vec::new();
    let mut claims = String::new();
    for (
        index,
        Passage {
            source,
            claim,
            passage,
            ..
        },
    ) in picked.iter().enumerate()
    {
        let n = *number.entry(*source).or_insert_with(|| {
            cited.push(describe(*source, gathered.read, articles));
            cited.len()
        });
        if let Some(entry) = cited.get_mut(n - 1) {
            entry.passages.push(one_line(passage));
        }
        claims.push_str(&format!("{}. {} [{n}]\n", index + 1, one_line(claim)));
    }

    let mut skipped = gathered.skipped.clone();
    for (index, page) in gathered.read.iter().enumerate() {
        if !number.contains_key(&index) {
            skipped.push(Skipped {
                url: page.url.clone(),
                reason: "read, but no passage in it is about the question".to_owned(),
            });
        }
    }
    for (offset, article) in articles.iter().enumerate() {
        if !number.contains_key(&(gathered.read.len() + offset)) {
            skipped.push(Skipped {
                url: article.url.clone(),
                reason: "an article whose abstract has no passage about the question".to_owned(),
            });
        }
    }

    let mut out = format!(
        "Research brief: \"{}\" — {}\n",
        one_line(gathered.question),
        plural(cited.len(), "source")
    );
    if cited.is_empty() && gathered.read.is_empty() && articles.is_empty() {
        out.push_str("\nNothing was found: no engine listed a page for these queries.\n");
    } else if cited.is_empty() {
        out.push_str("\nNothing that was read says anything about the question.\n");
    } else {
        out.push('\n');
        out.push_str(&claims);
        out.push_str("\nSources:\n");
        for (index, source) in cited.iter().enumerate() {
            out.push_str(&format!(
                "[{}] {} — {}{}\n",
                index + 1,
                source.title,
                source.url,
                source.note
            ));
            for passage in &source.passages {
                out.push_str(&format!("    > \"{passage}\"\n"));
            }
        }
    }
    if !skipped.is_empty() {
        out.push_str("\nSkipped:\n");
        for item in &skipped {
            out.push_str(&format!(
                "- {} — {}\n",
                one_line(&item.url),
                one_line(&item.reason)
            ));
        }
    }
    let queries: Vec<String> = gathered
        .searched
        .iter()
        .map(|s| format!("\"{}\"", one_line(&s.query)))
        .collect();
    out.push_str(&format!(
        "\nDepth: {}; queries: {}\n",
        gathered.depth.name(),
        queries.join(", ")
    ));
    out.push_str(&format!("Engines: {}", engines(gathered.searched)));
    if let Some(line) = literature(gathered.consulted) {
        out.push_str(&format!("\nLiterature: {line}"));
    }
    out
}

fn describe(source: usize, read: &[Read], articles: &[Article]) -> Cited {
    if let Some(page) = read.get(source) {
        return Cited {
            title: passages::quote(&one_line(&page.title), TITLE_CHARS),
            url: one_line(&page.url),
            note: String::new(),
            passages: Vec::new(),
        };
    }
    let article = articles.get(source - read.len());
    let title = article.map_or("", |a| a.title.as_str());
    let url = article.map_or("", |a| a.url.as_str());
    let details: Vec<String> = article
        .into_iter()
        .flat_map(|a| [a.journal.as_deref(), a.year.as_deref()])
        .flatten()
        .map(one_line)
        .filter(|text| !text.is_empty())
        .collect();
    let note = if details.is_empty() {
        " (PubMed)".to_owned()
    } else {
        format!(" (PubMed; {})", details.join(", "))
    };
    Cited {
        title: passages::quote(&one_line(title), TITLE_CHARS),
        url: one_line(url),
        note,
        passages: Vec::new(),
    }
}

/// Each engine's answers over every query: how many it answered, and what became of the rest.
fn engines(searched: &[Searched]) -> String {
    let mut order: Vec<&'static str> = Vec::new();
    let mut tallies: HashMap<&'static str, Vec<&Outcome>> = HashMap::new();
    for s in searched {
        for (name, outcome) in &s.outcomes {
            if !order.contains(name) {
                order.push(name);
            }
            tallies.entry(name).or_default().push(outcome);
        }
    }
    order
        .iter()
        .map(|name| {
            let outcomes = tallies.get(name).map(Vec::as_slice).unwrap_or_default();
            let count =
                |wanted: fn(&Outcome) -> bool| outcomes.iter().filter(|o| wanted(o)).count();
            let answered = count(|o| matches!(o, Outcome::Results(_)));
            let results: usize = outcomes
                .iter()
                .map(|o| match o {
                    Outcome::Results(hits) => hits.len(),
                    _ => 0,
                })
                .sum();
            let mut parts = vec![format!(
                "{answered} of {} answered ({})",
                plural(outcomes.len(), "query"),
                plural(results, "result")
            )];
            let empty = count(|o| matches!(o, Outcome::Empty));
            if empty > 0 {
                parts.push(format!("{empty} found nothing"));
            }
            let unrelated = count(|o| matches!(o, Outcome::Unrelated(_)));
            if unrelated > 0 {
                parts.push(format!("{unrelated} discarded as unrelated"));
            }
            let refused: Vec<String> = outcomes
                .iter()
                .filter_map(|o| match o {
                    Outcome::Challenge(what) => Some(format!("turned away by {what}")),
                    Outcome::Failed(why) => Some(format!("failed ({})", one_line(why))),
                    _ => None,
                })
                .collect();
            if let Some(first) = refused.first() {
                parts.push(format!("{} {first}", refused.len()));
            }
            format!("{name}: {}", parts.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn literature(consulted: &Consulted) -> Option<String> {
    match consulted {
        Consulted::NotAsked => None,
        Consulted::NotConfigured => {
            Some("the question is biomedical, but no PubMed client is configured".to_owned())
        }
        Consulted::Found(articles) => {
            Some(format!("PubMed: {}", plural(articles.len(), "article")))
        }
        Consulted::Failed(why) => Some(format!("PubMed failed ({})", one_line(why))),
    }
}

fn plural(n: usize, noun: &str) -> String {
    match (n, noun) {
        (1, _) => format!("1 {noun}"),
        (_, "query") => format!("{n} queries"),
        _ => format!("{n} {noun}s"),
    }
}

/// Whitespace, line breaks included, folded to single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::web::engines::Hit;

    fn searched(outcomes: Vec<(&'static str, Outcome)>) -> Searched {
        Searched {
            query: "nextflow\nresume".into(),
            outcomes,
        }
    }

    #[test]
    fn each_engine_is_summed_up_over_the_queries() {
        let hit = Hit {
            title: "t".into(),
            url: "https://a.org".into(),
            snippet: String::new(),
        };
        let all = [
            searched(vec![
                ("brave", Outcome::Results(vec![hit.clone(), hit.clone()])),
                ("bing", Outcome::Challenge("a rate limit (HTTP 429)".into())),
            ]),
            searched(vec![
                ("brave", Outcome::Empty),
                ("bing", Outcome::Failed("HTTP 500\nboom".into())),
            ]),
            searched(vec![
                ("brave", Outcome::Unrelated(4)),
                ("bing", Outcome::Results(vec![hit])),
            ]),
        ];
        assert_eq!(
            engines(&all),
            "brave: 1 of 3 queries answered (2 results), 1 found nothing, 1 discarded as \
             unrelated; bing: 1 of 3 queries answered (1 result), 2 turned away by a rate \
             limit (HTTP 429)"
        );
    }

    #[test]
    fn nothing_found_is_said_in_so_many_words() {
        let all = [searched(vec![("searxng", Outcome::Empty)])];
        let brief = compose(&Gathered {
            question: "what\nis  it?",
            depth: Depth::Quick,
            searched: &all,
            consulted: &Consulted::NotAsked,
            read: &[],
            skipped: Vec::new(),
        });
        assert_eq!(
            brief,
            "Research brief: \"what is it?\" — 0 sources\n\
             \nNothing was found: no engine listed a page for these queries.\n\
             \nDepth: quick; queries: \"nextflow resume\"\n\
             Engines: searxng: 0 of 1 query answered (0 results), 1 found nothing"
        );
    }

    #[test]
    fn a_read_page_without_a_relevant_passage_is_listed_as_skipped() {
        let read = [Read {
            url: "https://soup.example/".into(),
            title: "Soup".into(),
            text: "Simmer the onions slowly in butter until soft and golden.".into(),
            markdown: true,
        }];
        let all = [searched(vec![("searxng", Outcome::Empty)])];
        let brief = compose(&Gathered {
            question: "nextflow resume cache",
            depth: Depth::Standard,
            searched: &all,
            consulted: &Consulted::NotConfigured,
            read: &read,
            skipped: Vec::new(),
        });
        assert!(
            brief.contains("— 0 sources\n\nNothing that was read says anything"),
            "{brief}"
        );
        assert!(
            brief.contains(
                "- https://soup.example/ — read, but no passage in it is about the question"
            ),
            "{brief}"
        );
        assert!(
            brief.ends_with(
                "\nLiterature: the question is biomedical, but no PubMed client is configured"
            ),
            "{brief}"
        );
    }
}
