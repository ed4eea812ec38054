//! `esearch`: a query term to a count and a page of ids, in NCBI's JSON shape (numbers as
//! strings, `ERROR`, `errorlist` and `warninglist`).

use serde_json::Value;

use crate::client::{Eutils, Method, one_line};
use crate::error::NcbiError;

/// One esearch request. `Esearch::new("pubmed", "crispr").retmax(5)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Esearch {
    pub db: String,
    pub term: String,
    pub retmax: u32,
    pub retstart: u32,
    /// `relevance`, `pub_date`, … as the database names its orders.
    pub sort: Option<String>,
    /// `YYYY`, `YYYY/MM` or `YYYY/MM/DD`, on the publication date (`datetype=pdat`).
    pub mindate: Option<String>,
    pub maxdate: Option<String>,
}

impl Esearch {
    pub fn new(db: impl Into<String>, term: impl Into<String>) -> Self {
        Self {
            db: db.into(),
            term: term.into(),
            retmax: 20,
            retstart: 0,
            sort: None,
            mindate: None,
            maxdate: None,
        }
    }

    #[must_use]
    pub fn retmax(mut self, retmax: u32) -> Self {
        self.retmax = retmax;
        self
    }

    #[must_use]
    pub fn retstart(mut self, retstart: u32) -> Self {
        self.retstart = retstart;
        self
    }

    #[must_use]
    pub fn sort(mut self, sort: impl Into<String>) -> Self {
        self.sort = Some(sort.into());
        self
    }

    #[must_use]
    pub fn dates(mut self, mindate: Option<String>, maxdate: Option<String>) -> Self {
        self.mindate = mindate;
        self.maxdate = maxdate;
        self
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        let mut params = vec![
            ("db", self.db.clone()),
            ("term", self.term.clone()),
            ("retmode", "json".to_owned()),
            ("retmax", self.retmax.to_string()),
            ("retstart", self.retstart.to_string()),
        ];
        if let Some(sort) = &self.sort {
            params.push(("sort", sort.clone()));
        }
        if self.mindate.is_some() || self.maxdate.is_some() {
            // NCBI needs both ends of a range: an open end is the widest the database allows.
            params.push(("datetype", "pdat".to_owned()));
            params.push((
                "mindate",
                self.mindate.clone().unwrap_or_else(|| "1800".to_owned()),
            ));
            params.push((
                "maxdate",
                self.maxdate.clone().unwrap_or_else(|| "3000".to_owned()),
            ));
        }
        params
    }
}

/// What esearch found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchResult {
    /// Every match, not just this page.
    pub count: u64,
    /// This page's ids, in NCBI's order.
    pub ids: Vec<String>,
    /// The query as NCBI understood it (`"crispr"[All Fields] AND …`).
    pub query_translation: Option<String>,
    /// `errorlist.phrasesnotfound`: words of the query that matched nothing.
    pub phrases_not_found: Vec<String>,
    /// `errorlist.fieldsnotfound`: `[Field]` tags the database does not have.
    pub fields_not_found: Vec<String>,
    /// Everything in `warninglist` (ignored phrases, output messages).
    pub warnings: Vec<String>,
}

impl Eutils {
    pub async fn esearch(&self, search: &Esearch) -> Result<SearchResult, NcbiError> {
        let body = self.call("esearch", search.params(), Method::Get).await?;
        parse_esearch(&body).map_err(|error| self.scrub(error))
    }
}

/// Reads an esearch JSON answer.
pub fn parse_esearch(body: &str) -> Result<SearchResult, NcbiError> {
    let malformed = |detail: String| NcbiError::Malformed {
        utility: "esearch",
        expected: "esearch JSON",
        detail,
    };
    let value: Value = serde_json::from_str(body)
        .map_err(|error| malformed(format!("{error}: {}", one_line(body, 120))))?;
    if let Some(message) = value.get("error").and_then(Value::as_str) {
        return Err(NcbiError::Reported {
            utility: "esearch",
            message: message.to_owned(),
        });
    }
    let result = value
        .get("esearchresult")
        .ok_or_else(|| malformed("no `esearchresult`".to_owned()))?;
    if let Some(message) = result.get("ERROR").and_then(Value::as_str) {
        return Err(NcbiError::Reported {
            utility: "esearch",
            message: message.to_owned(),
        });
    }
    let count = number(&result["count"]).ok_or_else(|| malformed("no `count`".to_owned()))?;
    let ids = match &result["idlist"] {
        Value::Array(ids) => ids.iter().filter_map(id_text).collect(),
        Value::Null => Vec::new(),
        _ => return Err(malformed("`idlist` is not a list".to_owned())),
    };
    let warnings = ["phrasesignored", "quotedphrasesnotfound", "outputmessages"]
        .iter()
        .flat_map(|key| strings(&result["warninglist"][*key]))
        .collect();
    Ok(SearchResult {
        count,
        ids,
        query_translation: result["querytranslation"]
            .as_str()
            .filter(|text| !text.is_empty())
            .map(str::to_owned),
        phrases_not_found: strings(&result["errorlist"]["phrasesnotfound"]),
        fields_not_found: strings(&result["errorlist"]["fieldsnotfound"]),
        warnings,
    })
}

/// A count NCBI sends as a string (`"123"`), or as a number.
pub(crate) fn number(value: &Value) -> Option<u64> {
    match value {
        Value::String(text) => text.trim().parse().ok(),
        other => other.as_u64(),
    }
}

fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(crate) fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn counts_are_strings_and_the_id_order_is_kept() {
        let body = r#"{"header":{"type":"esearch","version":"0.3"},"esearchresult":{"count":"1523","retmax":"3","retstart":"0","idlist":["39187654","38012345","39000001"],"translationset":[{"from":"crispr","to":"\"clustered regularly interspaced short palindromic repeats\"[MeSH Terms] OR crispr[All Fields]"}],"querytranslation":"\"clustered regularly interspaced short palindromic repeats\"[MeSH Terms] OR crispr[All Fields]"}}"#;
        let result = parse_esearch(body).unwrap();
        assert_eq!(result.count, 1523);
        assert_eq!(result.ids, vec!["39187654", "38012345", "39000001"]);
        assert!(
            result
                .query_translation
                .unwrap()
                .starts_with("\"clustered regularly")
        );
    }

    #[test]
    fn errorlist_and_warninglist_are_read() {
        let body = r#"{"header":{"type":"esearch","version":"0.3"},"esearchresult":{"count":"0","retmax":"0","retstart":"0","idlist":[],"translationset":[],"querytranslation":"","errorlist":{"phrasesnotfound":["xqzzyplonk"],"fieldsnotfound":["[Nosuchfield]"]},"warninglist":{"phrasesignored":["and"],"quotedphrasesnotfound":[],"outputmessages":["No items found."]}}}"#;
        assert_eq!(
            parse_esearch(body).unwrap(),
            SearchResult {
                count: 0,
                ids: vec![],
                query_translation: None,
                phrases_not_found: vec!["xqzzyplonk".into()],
                fields_not_found: vec!["[Nosuchfield]".into()],
                warnings: vec!["and".into(), "No items found.".into()],
            }
        );
    }

    #[test]
    fn an_error_answer_is_reported_with_its_text() {
        let body = r#"{"header":{"type":"esearch","version":"0.3"},"esearchresult":{"ERROR":"Invalid db name specified: pubmedd"}}"#;
        assert_eq!(
            parse_esearch(body).unwrap_err().to_string(),
            "NCBI esearch reported an error: Invalid db name specified: pubmedd"
        );
        let body =
            r#"{"error":"API key invalid","api-key":"abc","type":"invalid","status":"unknown"}"#;
        assert_eq!(
            parse_esearch(body).unwrap_err().to_string(),
            "NCBI esearch reported an error: API key invalid"
        );
    }

    #[test]
    fn malformed_bodies_are_one_line_errors() {
        for body in [
            "<html>\n<body>Down for maintenance</body></html>",
            "{}",
            r#"{"esearchresult":{"count":"many"}}"#,
            r#"{"esearchresult":{"count":"1","idlist":"1"}}"#,
        ] {
            let text = parse_esearch(body).unwrap_err().to_string();
            assert!(
                text.starts_with("NCBI esearch answered with a body that is not esearch JSON"),
                "{text}"
            );
            assert!(!text.contains('\n'), "{text}");
        }
    }

    #[test]
    fn a_date_range_gets_both_ends() {
        let params = Esearch::new("pubmed", "x")
            .dates(Some("2020/01".into()), None)
            .params();
        assert!(params.contains(&("datetype", "pdat".into())));
        assert!(params.contains(&("mindate", "2020/01".into())));
        assert!(params.contains(&("maxdate", "3000".into())));
    }
}
