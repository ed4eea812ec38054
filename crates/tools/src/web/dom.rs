//! Small walks over an html5ever DOM (the tree `htmd` parses into): enough to pick out a page's
//! main element or a search engine's result blocks without a selector engine.

use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};

/// A parsed page. Holds the document so every node found in it stays whole: dropping an rcdom
/// node empties every descendant's children, even those still held elsewhere.
pub struct Dom {
    pub document: Rc<Node>,
}

impl std::fmt::Debug for Dom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dom")
    }
}

impl Dom {
    pub fn parse(html: &str) -> Option<Self> {
        htmd::HtmlToMarkdown::new()
            .html_to_tree(html)
            .ok()
            .map(|document| Self { document })
    }
}

/// The element's tag name, `None` for anything else.
pub fn tag(node: &Node) -> Option<String> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.to_string()),
        _ => None,
    }
}

pub fn attr(node: &Node, wanted: &str) -> Option<String> {
    match &node.data {
        NodeData::Element { attrs, .. } => attrs
            .borrow()
            .iter()
            .find(|attr| &*attr.name.local == wanted)
            .map(|attr| attr.value.to_string()),
        _ => None,
    }
}

/// Whether the element's `class` attribute lists `class` (a whole word).
pub fn has_class(node: &Node, class: &str) -> bool {
    attr(node, "class").is_some_and(|classes| classes.split_whitespace().any(|c| c == class))
}

/// The first node, depth first and `node` included, that `wanted` accepts.
pub fn find(node: &Rc<Node>, wanted: &dyn Fn(&Node) -> bool) -> Option<Rc<Node>> {
    if wanted(node) {
        return Some(Rc::clone(node));
    }
    node.children
        .borrow()
        .iter()
        .find_map(|child| find(child, wanted))
}

/// Every node `wanted` accepts, in document order, not looking inside one that matched.
pub fn find_all(node: &Rc<Node>, wanted: &dyn Fn(&Node) -> bool) -> Vec<Rc<Node>> {
    let mut found = Vec::new();
    collect(node, wanted, &mut found);
    found
}

fn collect(node: &Rc<Node>, wanted: &dyn Fn(&Node) -> bool, found: &mut Vec<Rc<Node>>) {
    if wanted(node) {
        found.push(Rc::clone(node));
        return;
    }
    for child in node.children.borrow().iter() {
        collect(child, wanted, found);
    }
}

/// The element named `name`, depth first.
pub fn find_tag(node: &Rc<Node>, name: &str) -> Option<Rc<Node>> {
    find(node, &|n| tag(n).as_deref() == Some(name))
}

/// All the text beneath `node`, whitespace runs collapsed to one space.
pub fn text(node: &Rc<Node>) -> String {
    let mut out = String::new();
    collect_text(node, &mut out);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn collect_text(node: &Rc<Node>, out: &mut String) {
    if let NodeData::Text { contents } = &node.data {
        out.push_str(&contents.borrow());
        out.push(' ');
    }
    if matches!(tag(node).as_deref(), Some("script" | "style")) {
        return;
    }
    for child in node.children.borrow().iter() {
        collect_text(child, out);
    }
}
