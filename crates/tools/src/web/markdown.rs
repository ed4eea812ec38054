//! A page's main text as Markdown: the `<main>` element, else the first `<article>`, else the
//! body, with scripts, styles and page furniture (navigation, banners, forms) left out.

use std::rc::Rc;

use htmd::HtmlToMarkdown;

use super::dom::{self, Dom};

/// Never part of the text a reader came for.
const ALWAYS_SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "aside", "form", "iframe", "svg", "canvas",
    "button", "select", "dialog",
];

/// The site's banner and footer: skipped around the body, kept inside `<main>`/`<article>`, where
/// a header usually carries the headline.
const FURNITURE: &[&str] = &["header", "footer"];

/// The page converted: its `<title>` (if any) and the Markdown of its main element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub title: Option<String>,
    pub markdown: String,
}

pub fn html_to_markdown(html: &str) -> Page {
    let Some(dom) = Dom::parse(html) else {
        return Page {
            title: None,
            markdown: String::new(),
        };
    };
    let document = &dom.document;
    let title = dom::find_tag(document, "title")
        .map(|node| dom::text(&node))
        .filter(|text| !text.is_empty());
    let (root, skipped) =
        match dom::find_tag(document, "main").or_else(|| dom::find_tag(document, "article")) {
            Some(main) => (main, ALWAYS_SKIPPED.to_vec()),
            None => (
                dom::find_tag(document, "body").unwrap_or_else(|| Rc::clone(document)),
                [ALWAYS_SKIPPED, FURNITURE].concat(),
            ),
        };
    let converter = HtmlToMarkdown::builder().skip_tags(skipped).build();
    Page {
        title,
        markdown: converter.tree_to_markdown(&root),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_main_text_and_drops_the_furniture() {
        let page = html_to_markdown(
            "<html><head><title> Hello\n  page </title><style>p{}</style></head><body>\
             <nav><a href=/>Home</a></nav><header>Site banner</header>\
             <h1>Heading</h1><p>Some <b>bold</b> text.</p><script>alert(1)</script>\
             <footer>Copyright</footer></body></html>",
        );
        assert_eq!(page.title.as_deref(), Some("Hello page"));
        assert_eq!(page.markdown, "# Heading\n\nSome **bold** text.");
    }

    #[test]
    fn prefers_the_main_element() {
        let page = html_to_markdown(
            "<body><div>Sidebar</div><main><header><h1>Title</h1></header>\
             <ul><li>one</li><li>two</li></ul></main></body>",
        );
        assert_eq!(page.title, None);
        assert!(page.markdown.starts_with("# Title"), "{}", page.markdown);
        assert!(page.markdown.contains("one"), "{}", page.markdown);
        assert!(!page.markdown.contains("Sidebar"), "{}", page.markdown);
    }
}
