//! Runs every case of `corpus/decisions.jsonl` and checks the corpus covers the vocabulary.

use std::collections::BTreeSet;

use codaris_policy::{CapabilityName, Case, Code, Request, check_case_line};
use pretty_assertions::assert_eq;

use crate::support::CORPUS;

fn cases() -> Vec<Case> {
    CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Case::parse(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn every_case_decides_as_expected() {
    let failures: Vec<String> = CORPUS
        .lines()
        .filter_map(|line| check_case_line(line).err().map(|e| e.to_string()))
        .collect();
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn case_names_are_unique() {
    let cases = cases();
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len());
}

#[test]
fn the_corpus_uses_every_code_and_every_capability() {
    let cases = cases();
    let codes: BTreeSet<Code> = cases.iter().map(|c| c.expect.code).collect();
    let missing: Vec<Code> = Code::ALL
        .into_iter()
        .filter(|c| !codes.contains(c))
        .collect();
    assert_eq!(missing, [], "codes without a case");
    let caps: BTreeSet<CapabilityName> = cases
        .iter()
        .filter_map(|c| c.expect.capability.as_ref().map(|cap| cap.name))
        .collect();
    let missing: Vec<CapabilityName> = CapabilityName::ALL
        .into_iter()
        .filter(|c| !caps.contains(c))
        .collect();
    assert_eq!(missing, [], "capabilities without a case");
}

#[test]
fn requests_survive_a_json_round_trip_with_the_same_decision() {
    for case in cases() {
        let text = serde_json::to_string(&case.request).unwrap();
        let again = Request::from_json(&text).unwrap();
        assert_eq!(again.evaluate(), case.request.evaluate(), "{}", case.name);
    }
}

#[test]
fn decisions_keep_the_sentence_and_shape_promises() {
    for case in cases() {
        let line = serde_json::to_vec(&case.request).unwrap();
        crate::fuzz_body::run(&line);
    }
}

#[test]
fn a_once_grant_that_allowed_a_call_is_reported_for_consumption() {
    let case = cases()
        .into_iter()
        .find(|c| c.name == "command_granted_once")
        .unwrap();
    let decision = case.check().unwrap();
    let spent: Vec<Option<&str>> = decision.consumes().map(|g| g.id.as_deref()).collect();
    assert_eq!(spent, [Some("g7")]);
}
