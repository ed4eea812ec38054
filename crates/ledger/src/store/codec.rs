//! Stored records to and from their bytes: JSON, each record's schema checked after it is
//! decoded, and the key a report names a record by.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Corrupt, LedgerError};
use crate::record::{SCHEMA, Versioned};

pub(crate) fn encode(record: &impl Serialize) -> Result<Vec<u8>, LedgerError> {
    // Sized for a decision record (most are under 1 KiB): `to_vec` starts at 128 bytes and
    // grew three times for one.
    let mut bytes = Vec::with_capacity(1024);
    serde_json::to_writer(&mut bytes, record).map_err(LedgerError::Encode)?;
    Ok(bytes)
}

/// Decodes one record, refusing shapes newer than this build knows.
pub(crate) fn decode<T: DeserializeOwned + Versioned>(
    place: &str,
    key: &str,
    bytes: &[u8],
) -> Result<T, LedgerError> {
    decode_value(place, key, bytes).map_err(LedgerError::Corrupt)
}

pub(crate) fn decode_value<T: DeserializeOwned + Versioned>(
    place: &str,
    key: &str,
    bytes: &[u8],
) -> Result<T, Corrupt> {
    decode_why(bytes).map_err(|reason| Corrupt {
        place: place.to_owned(),
        key: key.to_owned(),
        reason,
    })
}

/// [`decode_value`] of a record read under its sled key: the key's text is made only for a
/// record that does not decode (reads of the whole ledger made one per record before).
pub(crate) fn decode_stored<T: DeserializeOwned + Versioned>(
    place: &str,
    key: &[u8],
    bytes: &[u8],
) -> Result<T, Corrupt> {
    decode_why(bytes).map_err(|reason| Corrupt {
        place: place.to_owned(),
        key: key_text(key),
        reason,
    })
}

/// A record decoded, or why it is corrupt.
fn decode_why<T: DeserializeOwned + Versioned>(bytes: &[u8]) -> Result<T, String> {
    let newer = |schema: u64| format!("schema {schema} is newer than this build's {SCHEMA}");
    // Straight into the type (no `serde_json::Value` in between), its schema checked after: a
    // newer record is refused whether or not its shape decodes as this build's. Only when it
    // does not decode is the header read on its own, to say why. The bytes are checked to be
    // UTF-8 once, as a whole: from bytes, serde_json checks each string on its own, and for a
    // record of many short strings that was an eighth of decoding it. Bytes that are not
    // UTF-8 are decoded as bytes, for serde_json to say where.
    let decoded = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str::<T>(text),
        Err(_) => serde_json::from_slice::<T>(bytes),
    };
    match decoded {
        Ok(record) => match record.schema() {
            Some(schema) if schema <= SCHEMA => Ok(record),
            Some(schema) => Err(newer(u64::from(schema))),
            None => Err("no schema version".to_owned()),
        },
        Err(error) => Err(match serde_json::from_slice::<Header>(bytes) {
            Ok(Header {
                schema: Some(schema),
            }) if schema > u64::from(SCHEMA) => newer(schema),
            Ok(Header { schema: None }) => "no schema version".to_owned(),
            _ => error.to_string(),
        }),
    }
}

/// The member every stored record starts its checks with; the others are skipped unread.
#[derive(serde::Deserialize)]
struct Header {
    #[serde(default)]
    schema: Option<u64>,
}

pub(crate) fn key_text(key: &[u8]) -> String {
    match <[u8; 8]>::try_from(key) {
        Ok(seq) => u64::from_be_bytes(seq).to_string(),
        Err(_) => String::from_utf8_lossy(key).into_owned(),
    }
}
