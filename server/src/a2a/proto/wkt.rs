//! `google.protobuf.Struct`, `Value` and `ListValue` for the A2A messages:
//! as prost-types defines them (an object's fields in a `BTreeMap`), with
//! ProtoJSON serde (a `Struct` is a JSON object, a `Value` any JSON value).
//!
//! Why not pbjson-types' own: its `Struct` keeps fields in a `HashMap`,
//! whose order differs from one map to the next, so the same task encoded
//! twice gave different bytes (the A2A TCK compares two subscribers'
//! streams byte for byte, STREAM-ORDER-003). Ordered fields encode the
//! same object to the same bytes every time.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value as Json};
use std::collections::BTreeMap;

/// A JSON object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Struct {
    #[prost(btree_map = "string, message", tag = "1")]
    pub fields: BTreeMap<String, Value>,
}

/// Any JSON value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(oneof = "value::Kind", tags = "1, 2, 3, 4, 5, 6")]
    pub kind: Option<value::Kind>,
}

/// A JSON array.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}

/// The kinds of [`Value`].
pub mod value {
    /// The kind of value (field numbers as `struct.proto`).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        /// `NullValue.NULL_VALUE`, the only value of that enum.
        #[prost(int32, tag = "1")]
        NullValue(i32),
        #[prost(double, tag = "2")]
        NumberValue(f64),
        #[prost(string, tag = "3")]
        StringValue(String),
        #[prost(bool, tag = "4")]
        BoolValue(bool),
        #[prost(message, tag = "5")]
        StructValue(super::Struct),
        #[prost(message, tag = "6")]
        ListValue(super::ListValue),
    }
}

use value::Kind;

impl From<Json> for Value {
    fn from(j: Json) -> Value {
        let kind = match j {
            Json::Null => Kind::NullValue(0),
            Json::Bool(b) => Kind::BoolValue(b),
            Json::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
            Json::String(s) => Kind::StringValue(s),
            Json::Array(a) => Kind::ListValue(ListValue {
                values: a.into_iter().map(Value::from).collect(),
            }),
            Json::Object(o) => Kind::StructValue(Struct::from(o)),
        };
        Value { kind: Some(kind) }
    }
}

impl From<Map<String, Json>> for Struct {
    fn from(o: Map<String, Json>) -> Struct {
        Struct {
            fields: o.into_iter().map(|(k, v)| (k, Value::from(v))).collect(),
        }
    }
}

impl From<&Value> for Json {
    fn from(v: &Value) -> Json {
        match &v.kind {
            None | Some(Kind::NullValue(_)) => Json::Null,
            Some(Kind::BoolValue(b)) => Json::Bool(*b),
            // A whole number is written as one (1, not 1.0), as ProtoJSON
            // printers do; NaN and infinities have no JSON form.
            Some(Kind::NumberValue(n))
                if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 =>
            {
                Json::from(*n as i64)
            }
            Some(Kind::NumberValue(n)) => Number::from_f64(*n).map_or(Json::Null, Json::Number),
            Some(Kind::StringValue(s)) => Json::String(s.clone()),
            Some(Kind::ListValue(l)) => Json::from(l),
            Some(Kind::StructValue(s)) => Json::from(s),
        }
    }
}

impl From<&Struct> for Json {
    fn from(s: &Struct) -> Json {
        Json::Object(
            s.fields
                .iter()
                .map(|(k, v)| (k.clone(), Json::from(v)))
                .collect(),
        )
    }
}

impl From<&ListValue> for Json {
    fn from(l: &ListValue) -> Json {
        Json::Array(l.values.iter().map(Json::from).collect())
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Json::from(self).serialize(s)
    }
}

impl Serialize for Struct {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Json::from(self).serialize(s)
    }
}

impl Serialize for ListValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Json::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        Json::deserialize(d).map(Value::from)
    }
}

impl<'de> Deserialize<'de> for Struct {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Struct, D::Error> {
        match Json::deserialize(d)? {
            Json::Object(o) => Ok(Struct::from(o)),
            other => Err(D::Error::custom(format!(
                "a google.protobuf.Struct must be a JSON object, not {other}"
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for ListValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ListValue, D::Error> {
        match Json::deserialize(d)? {
            Json::Array(a) => Ok(ListValue {
                values: a.into_iter().map(Value::from).collect(),
            }),
            other => Err(D::Error::custom(format!(
                "a google.protobuf.ListValue must be a JSON array, not {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use serde_json::json;

    #[test]
    fn the_same_object_encodes_to_the_same_bytes() {
        let j = json!({"b": 1, "a": [true, null, "x", 1.5], "c": {"z": 1, "y": 2}});
        let Json::Object(o) = j.clone() else { panic!() };
        let one = Struct::from(o.clone()).encode_to_vec();
        let two = Struct::from(o).encode_to_vec();
        assert_eq!(one, two);
        let back = Struct::decode(one.as_slice()).unwrap();
        assert_eq!(Json::from(&back), j);
    }
}
