//! A downloaded samplesheet (CSV or TSV) and the files its cells name by URL: those on
//! test-datasets are fetched with it, and the local sheet names their local copies by
//! absolute path, so the test run reads nothing from the network. Every other byte of the
//! sheet is kept.

use std::path::Path;

use super::edit::{self, Edit};
use super::url::{Located, local_path, locate, looks_like_url};
use super::{NotFetched, Wanted};

/// The delimiter of a sheet by its name's extension, `None` for what is not a sheet.
pub fn sheet_delimiter(rel: &str) -> Option<u8> {
    let lower = rel.to_ascii_lowercase();
    if lower.ends_with(".csv") {
        Some(b',')
    } else if lower.ends_with(".tsv") {
        Some(b'\t')
    } else {
        None
    }
}

/// A sheet's files and its local text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SheetPlan {
    pub files: Vec<Wanted>,
    pub not_fetched: Vec<NotFetched>,
    /// The sheet with its fetched cells pointing at the local copies, when a cell changed.
    pub rewritten: Option<String>,
    /// How many cells were rewritten.
    pub cells: usize,
}

/// Plans the files the sheet `name` (its `<branch>/<path>`) names by URL.
pub fn plan_sheet(
    text: &str,
    delimiter: u8,
    name: &str,
    base: &str,
    local_root: &Path,
) -> SheetPlan {
    let mut plan = SheetPlan::default();
    let mut edits = Vec::new();
    let mut offset = 0;
    for (row, line) in text.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches(['\n', '\r']);
        for (start, end) in fields(content, delimiter) {
            let (start, end, quoted) = unquote(content, start, end);
            let cell = &content[start..end];
            if !looks_like_url(cell) {
                continue;
            }
            let named_by = format!("{name} row {}", row + 1);
            match locate(cell, base) {
                Located::Under(rel) => {
                    let local = local_path(local_root, &rel).to_string_lossy().into_owned();
                    edits.push(Edit::Replace {
                        start: offset + start,
                        end: offset + end,
                        with: cell_text(&local, delimiter, quoted),
                    });
                    if !plan.files.iter().any(|f| f.rel == rel) {
                        plan.files.push(Wanted {
                            url: format!("{base}{rel}"),
                            rel,
                            named_by,
                        });
                    }
                }
                Located::Off(reason) => plan.not_fetched.push(NotFetched {
                    named_by,
                    value: cell.to_owned(),
                    reason,
                }),
            }
        }
        offset += line.len();
    }
    plan.cells = edits.len();
    if !edits.is_empty() {
        plan.rewritten = Some(edit::apply(text, edits).0);
    }
    plan
}

/// The byte ranges of a line's fields, a double-quoted field's delimiters not splitting it.
fn fields(line: &str, delimiter: u8) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (at, byte) in line.bytes().enumerate() {
        if byte == b'"' {
            quoted = !quoted;
        } else if byte == delimiter && !quoted {
            out.push((start, at));
            start = at + 1;
        }
    }
    out.push((start, line.len()));
    out
}

/// A field's value range, surrounding blanks and one pair of double quotes left out.
fn unquote(line: &str, start: usize, end: usize) -> (usize, usize, bool) {
    let field = &line[start..end];
    let lead = field.len() - field.trim_start().len();
    let trimmed = field.trim();
    let (start, end) = (start + lead, start + lead + trimmed.len());
    if trimmed.len() >= 2 && trimmed.starts_with('"') && trimmed.ends_with('"') {
        (start + 1, end - 1, true)
    } else {
        (start, end, false)
    }
}

/// A local path as a cell: quoted (quotes doubled) when it would otherwise split the row.
fn cell_text(path: &str, delimiter: u8, quoted: bool) -> String {
    let needs = path.bytes().any(|b| b == delimiter || b == b'"');
    if quoted {
        path.replace('"', "\"\"")
    } else if needs {
        format!("\"{}\"", path.replace('"', "\"\""))
    } else {
        path.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    // nf-core/test-datasets viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv.
    const VIRALRECON: &str = "sample,fastq_1,fastq_2
SAMPLE1_PE,https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/illumina/amplicon/sample1_R1.fastq.gz,https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/illumina/amplicon/sample1_R2.fastq.gz
SAMPLE2_PE,https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/illumina/amplicon/sample2_R1.fastq.gz,https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/illumina/amplicon/sample2_R2.fastq.gz
SAMPLE3_SE,https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/illumina/amplicon/sample1_R1.fastq.gz,
SAMPLE3_SE,https://raw.githubusercontent.com/nf-core/test-datasets/viralrecon/illumina/amplicon/sample2_R1.fastq.gz,
";

    #[test]
    fn the_viralrecon_sheet_points_at_local_copies_of_its_fastqs() {
        let plan = plan_sheet(
            VIRALRECON,
            b',',
            "viralrecon/samplesheet/samplesheet_test_illumina_amplicon.csv",
            "https://raw.githubusercontent.com/nf-core/test-datasets/",
            Path::new("/p/tests/data"),
        );
        let rels: Vec<&str> = plan.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                "viralrecon/illumina/amplicon/sample1_R1.fastq.gz",
                "viralrecon/illumina/amplicon/sample1_R2.fastq.gz",
                "viralrecon/illumina/amplicon/sample2_R1.fastq.gz",
                "viralrecon/illumina/amplicon/sample2_R2.fastq.gz",
            ]
        );
        assert_eq!(plan.cells, 6);
        let local = VIRALRECON.replace(
            "https://raw.githubusercontent.com/nf-core/test-datasets/",
            "/p/tests/data/",
        );
        assert_eq!(plan.rewritten.as_deref(), Some(local.as_str()));
        assert!(plan.not_fetched.is_empty());
    }

    #[test]
    fn a_tsv_with_quoted_cells_and_a_url_off_the_base() {
        let sheet = "sample\tfastq_1\tfastq_2\r\n\"S1\"\t\"http://mirror/t/rnaseq/a_1.fq.gz\"\thttps://example.org/b.fq.gz\r\n";
        let plan = plan_sheet(
            sheet,
            b'\t',
            "rnaseq/s.tsv",
            "http://mirror/t/",
            Path::new("/p/d"),
        );
        assert_eq!(
            plan.rewritten.as_deref(),
            Some(
                "sample\tfastq_1\tfastq_2\r\n\"S1\"\t\"/p/d/rnaseq/a_1.fq.gz\"\thttps://example.org/b.fq.gz\r\n"
            )
        );
        assert_eq!(plan.files[0].url, "http://mirror/t/rnaseq/a_1.fq.gz");
        assert_eq!(plan.not_fetched.len(), 1);
        assert_eq!(plan.not_fetched[0].named_by, "rnaseq/s.tsv row 2");
        assert_eq!(sheet_delimiter("x/samplesheet.CSV"), Some(b','));
        assert_eq!(sheet_delimiter("x/genome.fa"), None);
    }

    #[test]
    fn a_path_holding_the_delimiter_is_quoted() {
        let plan = plan_sheet(
            "s,f\nA,http://m/b/r/x.fq\n",
            b',',
            "b/s.csv",
            "http://m/",
            Path::new("/data,1"),
        );
        assert_eq!(
            plan.rewritten.as_deref(),
            Some("s,f\nA,\"/data,1/b/r/x.fq\"\n")
        );
    }
}
