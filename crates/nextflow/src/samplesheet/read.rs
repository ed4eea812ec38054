//! Reading a samplesheet the way nf-schema does, into the JSON array it validates.
//!
//! CSV and TSV: the first row is the header, trailing separators after the header's last
//! name are dropped, every cell is trimmed, an empty cell is absent, and every other cell is
//! turned into a number, boolean or null when it reads as one (`JSONObject.stringToValue`).
//! JSON and YAML: read as they are, with `null` members dropped (nf-schema's `excludeNulls`).

use std::path::Path;

use serde_json::{Map, Number, Value};

use super::error::GateError;

/// The file formats nf-schema reads a samplesheet from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SheetFormat {
    Csv,
    Tsv,
    Json,
    Yaml,
}

impl SheetFormat {
    /// The lowercase name, as in a file extension.
    pub fn name(self) -> &'static str {
        match self {
            SheetFormat::Csv => "csv",
            SheetFormat::Tsv => "tsv",
            SheetFormat::Json => "json",
            SheetFormat::Yaml => "yaml",
        }
    }

    fn delimited(self) -> Option<u8> {
        match self {
            SheetFormat::Csv => Some(b','),
            SheetFormat::Tsv => Some(b'\t'),
            SheetFormat::Json | SheetFormat::Yaml => None,
        }
    }
}

/// One entry's converted cells: (column, text as written).
pub(crate) type Written = Vec<(String, String)>;

/// The text a converted cell was written as, if it was converted.
pub(crate) fn written_text<'w>(
    written: &'w [Written],
    entry: usize,
    field: &str,
) -> Option<&'w str> {
    written
        .get(entry)?
        .iter()
        .find(|(name, _)| name == field)
        .map(|(_, text)| text.as_str())
}

/// A sheet read into entries, with what the reader noticed on the way.
#[derive(Debug)]
pub(crate) struct Sheet {
    pub format: SheetFormat,
    /// One JSON object (normally) per entry, the instance nf-schema validates.
    pub entries: Vec<Value>,
    /// Column names in the order they appear (CSV/TSV header, or first-seen keys).
    pub columns: Vec<String>,
    /// For CSV/TSV, each entry's cells that were turned into a number, boolean or null, as
    /// written (trimmed): error messages quote the text, as nf-schema prints the original.
    /// (A cell kept as a string is its own text.)
    pub written: Vec<Written>,
    /// The file starts with a UTF-8 byte-order mark.
    pub bom: bool,
    /// Column names the header repeats.
    pub duplicate_columns: Vec<String>,
    /// 1-based entries that carry values past the header's last column, and how many.
    pub overlong: Vec<(usize, usize)>,
    /// 1-based header positions with no name.
    pub unnamed_columns: Vec<usize>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The format from the extension (any case), else from the content as nf-schema guesses it.
pub(crate) fn detect_format(path: &Path, text: &str) -> Result<SheetFormat, GateError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("csv") => return Ok(SheetFormat::Csv),
        Some("tsv") => return Ok(SheetFormat::Tsv),
        Some("json") => return Ok(SheetFormat::Json),
        Some("yaml" | "yml") => return Ok(SheetFormat::Yaml),
        _ => {}
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        return Ok(SheetFormat::Json);
    }
    if trimmed.starts_with("---") || trimmed.starts_with("- ") {
        return Ok(SheetFormat::Yaml);
    }
    // nf-schema's own rule for a sheet without a known extension: count the separators in
    // the first line.
    let first = text.lines().next().unwrap_or("");
    let commas = first.matches(',').count();
    let tabs = first.matches('\t').count();
    match commas.cmp(&tabs) {
        std::cmp::Ordering::Greater => Ok(SheetFormat::Csv),
        std::cmp::Ordering::Less => Ok(SheetFormat::Tsv),
        std::cmp::Ordering::Equal => Err(GateError::UnknownFormat {
            path: path.to_path_buf(),
        }),
    }
}

/// Decodes the bytes, noting and removing a byte-order mark.
pub(crate) fn decode<'b>(path: &Path, bytes: &'b [u8]) -> Result<(&'b str, bool), GateError> {
    let (body, bom) = match bytes.strip_prefix(BOM) {
        Some(rest) => (rest, true),
        None => (bytes, false),
    };
    match std::str::from_utf8(body) {
        Ok(text) => Ok((text, bom)),
        Err(e) => {
            let line = body
                .get(..e.valid_up_to())
                .map_or(0, |ok| ok.iter().filter(|b| **b == b'\n').count())
                + 1;
            Err(GateError::NotUtf8 {
                path: path.to_path_buf(),
                line,
            })
        }
    }
}

/// Reads `text` (already decoded) in `format`.
pub(crate) fn read_sheet(
    path: &Path,
    text: &str,
    format: SheetFormat,
    bom: bool,
) -> Result<Sheet, GateError> {
    let mut sheet = match format.delimited() {
        Some(delimiter) => read_delimited(path, text, format, delimiter)?,
        None => read_structured(path, text, format)?,
    };
    sheet.bom = bom;
    Ok(sheet)
}

fn read_delimited(
    path: &Path,
    text: &str,
    format: SheetFormat,
    delimiter: u8,
) -> Result<Sheet, GateError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .quote(b'"')
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let mut sheet = Sheet {
        format,
        entries: Vec::new(),
        columns: Vec::new(),
        written: Vec::new(),
        bom: false,
        duplicate_columns: Vec::new(),
        overlong: Vec::new(),
        unnamed_columns: Vec::new(),
    };
    let parse_error = |e: csv::Error| GateError::Parse {
        path: path.to_path_buf(),
        format: format.name(),
        message: e.to_string(),
    };
    let Some(header) = records.next() else {
        return Ok(sheet);
    };
    let header = header.map_err(parse_error)?;
    let mut names: Vec<String> = header.iter().map(|h| java_trim(h).to_owned()).collect();
    // nf-schema strips trailing commas or tabs from the header line before reading it.
    while names.last().is_some_and(String::is_empty) {
        names.pop();
    }
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            sheet.unnamed_columns.push(i + 1);
        } else if names[..i].contains(name) && !sheet.duplicate_columns.contains(name) {
            sheet.duplicate_columns.push(name.clone());
        }
    }
    for record in records {
        let record = record.map_err(parse_error)?;
        // A line of nothing but blanks is no entry (a row of bare separators still is one).
        if record.len() == 1 && java_trim(&record[0]).is_empty() {
            continue;
        }
        let mut entry = Map::new();
        let mut written = Vec::new();
        let mut extra = 0;
        for (i, cell) in record.iter().enumerate() {
            let cell = java_trim(cell);
            if cell.is_empty() {
                continue;
            }
            match names.get(i) {
                Some(name) if !name.is_empty() => {
                    let value = infer_value(cell);
                    if !value.is_string() {
                        written.push((name.clone(), cell.to_owned()));
                    }
                    entry.insert(name.clone(), value);
                }
                Some(_) => {}
                None => extra += 1,
            }
        }
        if extra > 0 {
            sheet.overlong.push((sheet.entries.len() + 1, extra));
        }
        sheet.entries.push(Value::Object(entry));
        sheet.written.push(written);
    }
    sheet.columns = names.into_iter().filter(|n| !n.is_empty()).collect();
    Ok(sheet)
}

fn read_structured(path: &Path, text: &str, format: SheetFormat) -> Result<Sheet, GateError> {
    let parse_error = |message: String| GateError::Parse {
        path: path.to_path_buf(),
        format: format.name(),
        message,
    };
    let value: Value = if format == SheetFormat::Json {
        serde_json::from_str(text).map_err(|e| parse_error(first_line(&e.to_string())))?
    } else {
        // One-line errors: the snippet would quote the sheet across several lines. The node
        // and event budgets fit a sheet as large as the gate reads (the defaults stop near
        // 35,000 entries); aliases, which no samplesheet needs many of, stay tightly bounded.
        let options = serde_saphyr::options! {
            with_snippet: false,
            budget: serde_saphyr::budget! {
                max_nodes: 8_000_000,
                max_events: 16_000_000,
            },
            alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: 100_000 },
        };
        serde_saphyr::from_str_with_options(text, options)
            .map_err(|e| parse_error(first_line(&e.to_string())))?
    };
    let entries = match value {
        Value::Array(entries) => entries,
        // A YAML file of nothing but comments is an empty sheet.
        Value::Null if format == SheetFormat::Yaml => Vec::new(),
        other => {
            return Err(GateError::NotAList {
                path: path.to_path_buf(),
                found: type_name(&other),
            });
        }
    };
    let entries: Vec<Value> = entries.into_iter().map(drop_nulls).collect();
    let mut columns: Vec<String> = Vec::new();
    for entry in &entries {
        if let Value::Object(map) = entry {
            for key in map.keys() {
                if !columns.contains(key) {
                    columns.push(key.clone());
                }
            }
        }
    }
    Ok(Sheet {
        format,
        written: Vec::new(),
        entries,
        columns,
        bom: false,
        duplicate_columns: Vec::new(),
        overlong: Vec::new(),
        unnamed_columns: Vec::new(),
    })
}

/// The first line of a parser's message, at most 300 characters of it.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// nf-schema serialises the parsed sheet with `excludeNulls`, so a `null` member is absent.
fn drop_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, drop_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(drop_nulls).collect()),
        other => other,
    }
}

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON Schema's integer: any number without a fractional part (`1.0` included).
pub(crate) fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Java's `String.trim()`, which Nextflow's `splitCsv(strip: true)` uses: every character
/// up to U+0020 goes, not only whitespace.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// org.json's `JSONObject.stringToValue`, which nf-schema applies to every CSV/TSV cell.
pub(crate) fn infer_value(cell: &str) -> Value {
    if cell.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if cell.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if cell.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    let starts_numeric = cell
        .as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_digit() || *b == b'-');
    if starts_numeric && let Some(number) = parse_number(cell) {
        return Value::Number(number);
    }
    Value::String(cell.to_owned())
}

fn parse_number(cell: &str) -> Option<Number> {
    let decimal = cell.contains(['.', 'e', 'E']) || cell == "-0";
    if decimal {
        // Only digits, sign, point and exponent: Rust's parser also takes `inf` and `NaN`,
        // which Java's BigDecimal does not.
        if !cell
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        {
            return None;
        }
        let f: f64 = cell.parse().ok()?;
        return Number::from_f64(f).filter(|_| f.is_finite());
    }
    let digits = cell.strip_prefix('-').unwrap_or(cell);
    // A leading zero ("007") is not a number to org.json.
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    if let Ok(i) = cell.parse::<i64>() {
        return Some(Number::from(i));
    }
    // Past i64 org.json keeps a BigInteger; the nearest double keeps it an integer here.
    cell.parse::<f64>().ok().and_then(Number::from_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_become_what_org_json_makes_of_them() {
        assert_eq!(infer_value("10"), json!(10));
        assert_eq!(infer_value("-3"), json!(-3));
        assert_eq!(infer_value("1.5"), json!(1.5));
        assert_eq!(infer_value("1e3"), json!(1000.0));
        assert_eq!(infer_value("TRUE"), json!(true));
        assert_eq!(infer_value("False"), json!(false));
        assert_eq!(infer_value("null"), Value::Null);
        assert_eq!(infer_value("007"), json!("007"));
        assert_eq!(infer_value("0"), json!(0));
        assert_eq!(infer_value(".5"), json!(".5"));
        assert_eq!(infer_value("+5"), json!("+5"));
        assert_eq!(infer_value("-inf"), json!("-inf"));
        assert_eq!(infer_value("0x1F"), json!("0x1F"));
        assert_eq!(infer_value("12abc"), json!("12abc"));
        assert_eq!(infer_value("-"), json!("-"));
        assert_eq!(infer_value("S1"), json!("S1"));
    }

    #[test]
    fn java_trim_drops_control_characters_too() {
        assert_eq!(java_trim("\u{1}\t a b \r\n"), "a b");
    }

    #[test]
    fn format_from_content_counts_separators_in_the_first_line() -> Result<(), GateError> {
        let p = Path::new("sheet");
        assert_eq!(detect_format(p, "a,b\tc,d\n")?, SheetFormat::Csv);
        assert_eq!(detect_format(p, "a\tb\tc\n")?, SheetFormat::Tsv);
        assert_eq!(detect_format(p, "  [{}]")?, SheetFormat::Json);
        assert_eq!(detect_format(p, "- sample: a\n")?, SheetFormat::Yaml);
        assert!(detect_format(p, "just words\n").is_err());
        assert_eq!(detect_format(Path::new("x.CSV"), "")?, SheetFormat::Csv);
        Ok(())
    }
}
