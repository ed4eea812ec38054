//! No input makes a reader panic, and every answer line stays a line.

use std::io::Cursor;

use codaris_nextflow::runs::{
    History, Trace, TraceSummary, parse_duration, parse_memory, parse_metrics, parse_wrapper,
};
use proptest::prelude::*;

const HEADER: &str =
    "task_id\thash\tname\tstatus\texit\tduration\trealtime\t%cpu\tpeak_rss\tworkdir\n";

proptest! {
    #[test]
    fn trace_rows_of_any_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut bytes = HEADER.as_bytes().to_vec();
        bytes.extend_from_slice(&body);
        let rows = Trace::read(Cursor::new(&bytes)).map(|r| r.count()).unwrap_or(0);
        prop_assert!(rows <= body.iter().filter(|b| **b == b'\n').count() + 1);
        let _ = TraceSummary::read(Cursor::new(&bytes));
    }

    #[test]
    fn any_text_as_history_wrapper_or_metrics(text in "\\PC{0,400}") {
        let h = History::read(&text);
        prop_assert!(h.entries.len() + h.skipped.len() <= text.lines().count());
        let _ = parse_wrapper(&text);
        let _ = parse_metrics(&text);
        let _ = parse_duration(&text);
        let _ = parse_memory(&text);
    }

    #[test]
    fn tab_separated_values_of_any_kind(cells in proptest::collection::vec("[-0-9a-zA-Z .%:/()]{0,12}", 10)) {
        let line = format!("{HEADER}{}\n", cells.join("\t"));
        let rows: Result<Vec<_>, _> = Trace::read(Cursor::new(line)).and_then(|r| r.collect());
        prop_assert!(rows.is_ok());
    }
}
