//! Canonical JSON written straight from `Serialize`: object keys sorted, members whose value is
//! `null` left out, everything else as `serde_json` writes it. Byte for byte what encoding the
//! record as a `serde_json::Value` and writing that out sorted gave (the chain's digests were
//! made that way, and must not change), without building the `Value`: that tree of maps and
//! strings was most of what digesting a record cost.
//!
//! What the `Value` route does is copied case by case: a float that is not finite is `null`; an
//! `f32` is widened to `f64` first; bytes are an array of numbers; a map key may be a string, a
//! character, an integer or a bool, written as a string; of two members with one key the last
//! wins. Anything rarer (another kind of map key, a 128-bit integer beyond 64 bits, serde_json's
//! raw values) is [`Unsupported`] here, and the caller takes the `Value` route for that record.

use std::borrow::Cow;
use std::ops::Range;

use serde::ser::{self, Serialize};

/// Why a record was not written canonically here.
#[derive(Debug)]
pub(crate) enum CanonError {
    /// The record's own `Serialize` failed, or a scalar did not encode.
    Json(serde_json::Error),
    /// A shape this writer leaves to the `Value` route.
    Unsupported,
}

impl std::fmt::Display for CanonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CanonError::Json(error) => error.fmt(f),
            CanonError::Unsupported => f.write_str("not supported by the canonical writer"),
        }
    }
}

impl std::error::Error for CanonError {}

impl ser::Error for CanonError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CanonError::Json(<serde_json::Error as ser::Error>::custom(msg))
    }
}

impl From<serde_json::Error> for CanonError {
    fn from(error: serde_json::Error) -> Self {
        CanonError::Json(error)
    }
}

type Result<T> = std::result::Result<T, CanonError>;

/// Appends `value` in canonical JSON to `out`.
pub(crate) fn write(value: &(impl Serialize + ?Sized), out: &mut Vec<u8>) -> Result<()> {
    value.serialize(Canon { out })
}

/// The names serde_json gives the structs that carry raw JSON and arbitrary-precision numbers.
const PRIVATE_PREFIX: &str = "$serde_json::private::";

struct Canon<'a> {
    out: &'a mut Vec<u8>,
}

fn scalar(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) -> Result<()> {
    serde_json::to_writer(out, value).map_err(CanonError::Json)
}

fn float(out: &mut Vec<u8>, value: f64) -> Result<()> {
    // The `Value` route turns a NaN or an infinity into `null`.
    if value.is_finite() {
        scalar(out, &value)
    } else {
        out.extend_from_slice(b"null");
        Ok(())
    }
}

/// An object being written: its members' values are written to `out` as they come, and put in
/// key order (nulls dropped) when it ends.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    /// Where the object's members begin in `out`.
    start: usize,
    members: Vec<(Cow<'static, str>, Range<usize>)>,
    key: Option<String>,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>, len: usize) -> Self {
        let start = out.len();
        Object {
            out,
            start,
            members: Vec::with_capacity(len),
            key: None,
        }
    }

    fn member(&mut self, key: Cow<'static, str>, value: &(impl Serialize + ?Sized)) -> Result<()> {
        let from = self.out.len();
        value.serialize(Canon { out: self.out })?;
        self.members.push((key, from..self.out.len()));
        Ok(())
    }

    fn finish(self) -> Result<&'a mut Vec<u8>> {
        let Object {
            out,
            start,
            mut members,
            ..
        } = self;
        let values = out.split_off(start);
        // Stable, so that of members with one key the last written comes last, and wins.
        members.sort_by(|a, b| a.0.cmp(&b.0));
        out.reserve(values.len() + members.len() * 16 + 2);
        out.push(b'{');
        let mut first = true;
        for (n, (key, range)) in members.iter().enumerate() {
            if members.get(n + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            let value = &values[range.start - start..range.end - start];
            if value == b"null" {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            scalar(out, key.as_ref())?;
            out.push(b':');
            out.extend_from_slice(value);
        }
        out.push(b'}');
        Ok(out)
    }
}

/// An array being written.
struct Array<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Array<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'[');
        Array { out, first: true }
    }

    fn item(&mut self, value: &(impl Serialize + ?Sized)) -> Result<()> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        value.serialize(Canon { out: self.out })
    }

    fn finish(self) -> &'a mut Vec<u8> {
        self.out.push(b']');
        self.out
    }
}

/// A variant with content: `{"name":content}`; the content is written in place and `end`
/// closes the object around it.
struct Variant<S>(S);

fn open_variant(out: &mut Vec<u8>, variant: &'static str) -> Result<()> {
    out.push(b'{');
    scalar(out, variant)?;
    out.push(b':');
    Ok(())
}

impl<'a> ser::Serializer for Canon<'a> {
    type Ok = ();
    type Error = CanonError;
    type SerializeSeq = Array<'a>;
    type SerializeTuple = Array<'a>;
    type SerializeTupleStruct = Array<'a>;
    type SerializeTupleVariant = Variant<Array<'a>>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Variant<Object<'a>>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_i128(self, v: i128) -> Result<()> {
        if let Ok(v) = u64::try_from(v) {
            scalar(self.out, &v)
        } else if let Ok(v) = i64::try_from(v) {
            scalar(self.out, &v)
        } else {
            Err(CanonError::Unsupported)
        }
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        match u64::try_from(v) {
            Ok(v) => scalar(self.out, &v),
            Err(_) => Err(CanonError::Unsupported),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        float(self.out, f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        float(self.out, v)
    }
    fn serialize_char(self, v: char) -> Result<()> {
        scalar(self.out, &v)
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        scalar(self.out, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        let mut array = Array::new(self.out);
        for byte in v {
            array.item(byte)?;
        }
        array.finish();
        Ok(())
    }
    fn serialize_none(self) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<()> {
        scalar(self.out, variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        if name.starts_with(PRIVATE_PREFIX) {
            return Err(CanonError::Unsupported);
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        let start = self.out.len();
        open_variant(self.out, variant)?;
        let from = self.out.len();
        value.serialize(Canon { out: self.out })?;
        if &self.out[from..] == b"null" {
            // A `null` member is left out: the object is empty.
            self.out.truncate(start);
            self.out.extend_from_slice(b"{}");
        } else {
            self.out.push(b'}');
        }
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Array<'a>> {
        Ok(Array::new(self.out))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Array<'a>> {
        Ok(Array::new(self.out))
    }
    fn serialize_tuple_struct(self, _: &'static str, _len: usize) -> Result<Array<'a>> {
        Ok(Array::new(self.out))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Variant<Array<'a>>> {
        open_variant(self.out, variant)?;
        Ok(Variant(Array::new(self.out)))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Object<'a>> {
        Ok(Object::new(self.out, len.unwrap_or(0)))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Object<'a>> {
        if name.starts_with(PRIVATE_PREFIX) {
            return Err(CanonError::Unsupported);
        }
        Ok(Object::new(self.out, len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Object<'a>>> {
        open_variant(self.out, variant)?;
        Ok(Variant(Object::new(self.out, len)))
    }
}

impl ser::SerializeSeq for Array<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeTuple for Array<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Array<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Variant<Array<'_>> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.0.item(value)
    }
    fn end(self) -> Result<()> {
        self.0.finish().push(b'}');
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<()> {
        self.key = Some(key.serialize(MapKey)?);
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let Some(key) = self.key.take() else {
            return Err(CanonError::Unsupported);
        };
        self.member(Cow::Owned(key), value)
    }
    fn end(self) -> Result<()> {
        self.finish().map(drop)
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.member(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<()> {
        self.finish().map(drop)
    }
}

impl ser::SerializeStructVariant for Variant<Object<'_>> {
    type Ok = ();
    type Error = CanonError;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.0.member(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<()> {
        self.0.finish()?.push(b'}');
        Ok(())
    }
}

/// A map key, as the `Value` route turns it into a string; other kinds of key are left to it.
struct MapKey;

fn key_text(value: impl std::fmt::Display) -> Result<String> {
    Ok(value.to_string())
}

impl ser::Serializer for MapKey {
    type Ok = String;
    type Error = CanonError;
    type SerializeSeq = ser::Impossible<String, CanonError>;
    type SerializeTuple = ser::Impossible<String, CanonError>;
    type SerializeTupleStruct = ser::Impossible<String, CanonError>;
    type SerializeTupleVariant = ser::Impossible<String, CanonError>;
    type SerializeMap = ser::Impossible<String, CanonError>;
    type SerializeStruct = ser::Impossible<String, CanonError>;
    type SerializeStructVariant = ser::Impossible<String, CanonError>;

    fn serialize_str(self, v: &str) -> Result<String> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_bool(self, v: bool) -> Result<String> {
        key_text(v)
    }
    fn serialize_i8(self, v: i8) -> Result<String> {
        key_text(v)
    }
    fn serialize_i16(self, v: i16) -> Result<String> {
        key_text(v)
    }
    fn serialize_i32(self, v: i32) -> Result<String> {
        key_text(v)
    }
    fn serialize_i64(self, v: i64) -> Result<String> {
        key_text(v)
    }
    fn serialize_i128(self, v: i128) -> Result<String> {
        key_text(v)
    }
    fn serialize_u8(self, v: u8) -> Result<String> {
        key_text(v)
    }
    fn serialize_u16(self, v: u16) -> Result<String> {
        key_text(v)
    }
    fn serialize_u32(self, v: u32) -> Result<String> {
        key_text(v)
    }
    fn serialize_u64(self, v: u64) -> Result<String> {
        key_text(v)
    }
    fn serialize_u128(self, v: u128) -> Result<String> {
        key_text(v)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String> {
        value.serialize(self)
    }
    fn serialize_f32(self, _: f32) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_f64(self, _: f64) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_none(self) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_unit(self) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String> {
        Err(CanonError::Unsupported)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(CanonError::Unsupported)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(CanonError::Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(CanonError::Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(CanonError::Unsupported)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(CanonError::Unsupported)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(CanonError::Unsupported)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(CanonError::Unsupported)
    }
}

#[cfg(test)]
mod tests;
