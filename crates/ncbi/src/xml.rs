//! A small element tree over quick-xml, enough for the XML NCBI answers with: SRA's `expxml`
//! and `runs` fragments (several top-level elements, so wrapped in a root first) and efetch's
//! `<PubmedArticleSet>`. Entities are resolved; unknown ones are kept as written.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// Nesting deeper than this is refused rather than followed (no NCBI record comes close).
const MAX_DEPTH: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Element(Element),
    Text(String),
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The child elements, in order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|node| match node {
            Node::Element(element) => Some(element),
            Node::Text(_) => None,
        })
    }

    /// The first child element called `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.elements().find(|element| element.name == name)
    }

    /// The element at the end of `path` (child names from here down), first match each step.
    pub fn find(&self, path: &[&str]) -> Option<&Element> {
        path.iter()
            .try_fold(self, |element, name| element.child(name))
    }

    /// All the text beneath this element, inline markup (`<i>`, `<sup>`) dissolved, with runs
    /// of whitespace made single spaces.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.collect_text(&mut out);
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn collect_text(&self, out: &mut String) {
        for node in &self.children {
            match node {
                Node::Text(text) => out.push_str(text),
                Node::Element(element) => element.collect_text(out),
            }
        }
    }
}

/// Parses `fragment` (zero or more top-level elements and text) as the children of a root
/// element named `root`.
pub fn parse_fragment(fragment: &str, root: &str) -> Result<Element, String> {
    parse_document(&format!("<{root}>{fragment}</{root}>"))
}

/// Parses a whole document; its root element is returned.
pub fn parse_document(text: &str) -> Result<Element, String> {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = vec![Element::default()];
    loop {
        let event = reader
            .read_event()
            .map_err(|error| format!("{error} at byte {}", reader.error_position()))?;
        match event {
            Event::Start(start) => {
                if stack.len() > MAX_DEPTH {
                    return Err(format!("nested deeper than {MAX_DEPTH} elements"));
                }
                stack.push(open(&start));
            }
            Event::Empty(start) => push(&mut stack, Node::Element(open(&start))),
            Event::End(_) => {
                // quick-xml checks that end tags match, so the stack has the open element.
                if stack.len() > 1
                    && let Some(done) = stack.pop()
                {
                    push(&mut stack, Node::Element(done));
                }
            }
            Event::Text(text) => {
                let text = String::from_utf8_lossy(&text).into_owned();
                push(&mut stack, Node::Text(text));
            }
            Event::CData(data) => {
                let text = String::from_utf8_lossy(&data).into_owned();
                push(&mut stack, Node::Text(text));
            }
            Event::GeneralRef(reference) => {
                let name = String::from_utf8_lossy(&reference).into_owned();
                let text = match reference.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_predefined_entity(&name)
                        .map_or_else(|| format!("&{name};"), str::to_owned),
                };
                push(&mut stack, Node::Text(text));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if stack.len() > 1 {
        return Err("the document ends inside an element".to_owned());
    }
    stack
        .pop()
        .and_then(|top| top.elements().next().cloned())
        .ok_or_else(|| "no element".to_owned())
}

fn open(start: &BytesStart<'_>) -> Element {
    let attrs = start
        .attributes()
        .flatten()
        .map(|attr| {
            let key = String::from_utf8_lossy(attr.key.local_name().as_ref()).into_owned();
            let value = attr
                .unescape_value()
                .map(|value| value.into_owned())
                .unwrap_or_else(|_| String::from_utf8_lossy(&attr.value).into_owned());
            (key, value)
        })
        .collect();
    Element {
        name: String::from_utf8_lossy(start.local_name().as_ref()).into_owned(),
        attrs,
        children: Vec::new(),
    }
}

fn push(stack: &mut [Element], node: Node) {
    if let Some(parent) = stack.last_mut() {
        parent.children.push(node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fragment_of_several_elements_parses_under_a_root() {
        let root = parse_fragment(
            r#"  <A x="1 &amp; 2"/><B>t&lt;i&gt; <i>it</i>&#233;</B> "#,
            "Root",
        )
        .unwrap();
        assert_eq!(root.name, "Root");
        assert_eq!(root.child("A").and_then(|a| a.attr("x")), Some("1 & 2"));
        assert_eq!(
            root.child("B").map(Element::text).as_deref(),
            Some("t<i> ité")
        );
    }

    #[test]
    fn broken_xml_is_an_error_not_a_panic() {
        for bad in ["<a><b></a>", "<a>", "<a></a></b>", ""] {
            assert!(parse_document(bad).is_err(), "{bad}");
        }
        let deep = "<a>".repeat(MAX_DEPTH + 5) + &"</a>".repeat(MAX_DEPTH + 5);
        assert!(parse_document(&deep).is_err());
    }
}
