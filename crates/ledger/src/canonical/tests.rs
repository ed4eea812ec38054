//! The canonical writer against the `Value` route it replaces: the same bytes, so the same
//! digests, for arbitrary JSON, arbitrary records, and every shape serde can hand it.

use std::collections::{BTreeMap, HashMap};

use codaris_policy::{CapabilityName, Grant, Lifetime, Request, Task};
use proptest::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::chain::{self, RecordKind, Tail};
use crate::record::{Backing, CardAnswer, CardRecord, DecisionRecord, GrantRecord, GrantSetRecord};

fn same<T: Serialize + std::fmt::Debug>(value: &T) {
    let expected = chain::canonical_by_value(value).unwrap();
    let mut got = Vec::new();
    super::write(value, &mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&expected),
        "{value:?}"
    );
    assert_eq!(
        chain::digest(value).unwrap(),
        chain::digest_by_value(value).unwrap()
    );
}

/// Text with what JSON must escape, and more than one byte per character.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]{0,3}",
        "[\\x00-\\x1f\"\\\\/a\u{e9}\u{2028}\u{1f600}]{0,6}",
        any::<String>(),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            // Few distinct keys, so that key order and near-equal keys are exercised.
            proptest::collection::vec((text(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn grant() -> impl Strategy<Value = Grant> {
    (
        proptest::option::of(text()),
        prop_oneof![Just(Lifetime::Once), Just(Lifetime::Session)],
        proptest::option::of("g[0-9]{1,12}"),
        prop_oneof![
            Just(CapabilityName::ReadOutsideFence),
            Just(CapabilityName::MutateOutsideFence),
            Just(CapabilityName::RunProgram),
        ],
    )
        .prop_map(|(path, lifetime, id, capability)| {
            let grant = Grant::new(capability, path.as_deref(), lifetime);
            match id {
                Some(id) => grant.with_id(&id),
                None => grant,
            }
        })
}

fn decision() -> impl Strategy<Value = DecisionRecord> {
    (
        (text(), text(), json(), "/[a-z/]{0,12}"),
        proptest::collection::vec(grant(), 0..4),
        (any::<u64>(), any::<u64>()),
        proptest::option::of((text(), any::<usize>(), any::<usize>())),
    )
        .prop_map(|((session, tool, args, cwd), grants, (seq, at), set)| {
            let request = Request {
                tool: codaris_policy::ToolId::parse(&tool),
                args,
                task: Task::new(cwd),
                grants,
                spec: None,
            };
            let decision = request.evaluate();
            let mut record = DecisionRecord::new(session, request, decision, at);
            record.seq = seq;
            record.grant_set =
                set.map(|(key, inline, count)| crate::record::GrantSetRef { key, inline, count });
            record
        })
}

fn grant_record() -> impl Strategy<Value = GrantRecord> {
    (
        (text(), text(), grant(), any::<u64>()),
        proptest::option::of(text()),
        proptest::option::of(prop_oneof![
            text().prop_map(|card_id| Backing::Card { card_id }),
            (text(), text()).prop_map(|(key, entry)| Backing::Allowlist { key, entry }),
        ]),
        (
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
        ),
    )
        .prop_map(
            |((id, session_id, grant, granted_at_ms), card_id, backing, (consumed, revoked))| {
                GrantRecord {
                    schema: crate::record::SCHEMA,
                    id,
                    session_id,
                    grant,
                    granted_at_ms,
                    card_id,
                    backing,
                    consumed_at_ms: consumed,
                    revoked_at_ms: revoked,
                }
            },
        )
}

fn card_record() -> impl Strategy<Value = CardRecord> {
    (
        (text(), text(), text(), any::<u64>()),
        proptest::collection::vec(text(), 0..3),
        proptest::option::of((
            prop_oneof![
                Just(CardAnswer::AllowOnce),
                Just(CardAnswer::AllowPrograms),
                Just(CardAnswer::DenyOnce),
                Just(CardAnswer::TimedOut),
            ],
            any::<u64>(),
            proptest::option::of(text()),
        )),
    )
        .prop_map(|((id, session, sentence, at), programs, answer)| {
            let mut card = CardRecord::asked(id, session, None, sentence, programs, at);
            if let Some((answer, at, grant_id)) = answer {
                card.answer = Some(answer);
                card.answered_at_ms = Some(at);
                card.grant_id = grant_id;
            }
            card
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_json_is_written_as_the_value_route_writes_it(value in json()) {
        same(&value);
    }

    #[test]
    fn arbitrary_decisions_digest_as_before(record in decision()) {
        same(&record);
    }

    #[test]
    fn arbitrary_grants_cards_sets_and_links_digest_as_before(
        grant in grant_record(),
        card in card_record(),
        ids in proptest::collection::vec("g[0-9]{12}", 0..4),
        (key, session, digest) in (text(), text(), text()),
    ) {
        same(&grant);
        same(&card);
        same(&GrantSetRecord {
            schema: crate::record::SCHEMA,
            key: key.clone(),
            session_id: session.clone(),
            grant_ids: ids,
            grants_digest: digest.clone(),
        });
        same(&Tail::default().link(RecordKind::Decision, &key, &session, &digest, None));
    }
}

#[derive(Debug, Serialize)]
struct Unit;

#[derive(Debug, Serialize)]
struct Pair(u8, &'static str);

#[derive(Debug, Serialize)]
struct Wrapped(Option<u8>);

#[derive(Debug, Serialize)]
enum Shapes {
    Plain,
    Newtype(Option<u32>),
    Tuple(u8, Option<u8>),
    Struct { b: Option<u8>, a: f32 },
}

#[derive(Debug, Serialize)]
struct Odd {
    z: f64,
    nan: f64,
    inf: f32,
    small: f32,
    #[serde(with = "serde_bytes_like")]
    bytes: Vec<u8>,
    c: char,
    wide: i128,
    wider: u128,
    unit: (),
    unit_struct: Unit,
    pair: Pair,
    wrapped: Wrapped,
    shapes: Vec<Shapes>,
    by_number: BTreeMap<i32, &'static str>,
    by_bool: HashMap<bool, Option<u8>>,
    by_char: BTreeMap<char, u8>,
    tuple: (u8, Option<()>, &'static str),
    #[serde(flatten)]
    flat: BTreeMap<&'static str, Value>,
}

/// Bytes through `serialize_bytes`, not as a sequence.
mod serde_bytes_like {
    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytes)
    }
}

#[test]
fn every_shape_serde_hands_over_is_written_as_the_value_route_writes_it() {
    let odd = Odd {
        z: -0.0,
        nan: f64::NAN,
        inf: f32::INFINITY,
        small: 0.1,
        bytes: vec![0, 7, 255],
        c: '\u{7}',
        wide: -5,
        wider: u128::from(u64::MAX),
        unit: (),
        unit_struct: Unit,
        pair: Pair(1, "\""),
        wrapped: Wrapped(None),
        shapes: vec![
            Shapes::Plain,
            Shapes::Newtype(None),
            Shapes::Newtype(Some(3)),
            Shapes::Tuple(1, None),
            Shapes::Struct { b: None, a: 1.5 },
            Shapes::Struct {
                b: Some(2),
                a: f32::NAN,
            },
        ],
        by_number: [(-1, "a"), (10, "b"), (2, "c")].into_iter().collect(),
        by_bool: [(true, Some(1)), (false, None)].into_iter().collect(),
        by_char: [('b', 1), ('a', 2)].into_iter().collect(),
        tuple: (1, None, "t"),
        // Flattened members share the object with the fields, one overriding `z`.
        flat: [
            ("z", Value::from(9)),
            ("a", Value::Null),
            ("y", Value::from("v")),
        ]
        .into_iter()
        .collect(),
    };
    same(&odd);
    same(&Shapes::Newtype(None));
    same(&Option::<u8>::None);
    same(&"top-level text");
}

#[test]
fn shapes_left_to_the_value_route_still_digest_as_before() {
    let beyond: u128 = u128::from(u64::MAX) + 1;
    let mut out = Vec::new();
    assert!(matches!(
        super::write(&beyond, &mut out),
        Err(super::CanonError::Unsupported)
    ));
    assert_eq!(
        chain::digest(&beyond).is_err(),
        chain::digest_by_value(&beyond).is_err()
    );
    let float_keys: BTreeMap<String, HashMap<u8, ()>> =
        [("k".to_owned(), [(1, ())].into_iter().collect())]
            .into_iter()
            .collect();
    same(&float_keys);
}
