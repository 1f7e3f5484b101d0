//! Duplicate keys in hand-written YAML (observe contracts, `play`'s QoS override file) are
//! refused with the key and its line. Read into `serde_json::Value` the last of them silently
//! wins (a whole `state:` block dropped); serde_yaml_ng's own `Value` refuses them but names
//! only the line where their mapping starts.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// What the error of a duplicate key starts with (after serde_yaml_ng's path, if any).
const DUPLICATE: &str = "duplicate key '";

/// The first key that appears twice in one mapping of `text`, at any depth, as an error
/// naming the key, where it is (`members[0]: `, serde_yaml_ng's path) and its line and column:
/// `duplicate key 'state' at line 9 column 1`. Keys are compared as written (`1` and `"1"`
/// collide, as they do once read as JSON). Text that is not YAML is `Ok` here: the parser
/// that reads it for real says what is wrong.
pub fn check_unique_keys(text: &str) -> Result<(), String> {
    match serde_yaml_ng::from_str::<Unique>(text) {
        Err(e) if e.to_string().contains(DUPLICATE) => Err(format!(
            "{e} (a mapping keeps one value per key: the earlier one would be dropped)"
        )),
        _ => Ok(()),
    }
}

/// Any YAML value, walked for duplicate keys and kept as nothing.
struct Unique;

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Unique, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Unique;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_i128<E>(self, _: i128) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_u128<E>(self, _: u128) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_unit<E>(self) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_none<E>(self) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Unique, D::Error> {
        Unique::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
        while seq.next_element::<Unique>()?.is_some() {}
        Ok(Unique)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
        let mut seen = HashSet::new();
        while map.next_key_seed(Key(&mut seen))?.is_some() {
            map.next_value::<Unique>()?;
        }
        Ok(Unique)
    }
    /// A tagged value (`!tag value`): its value is walked.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Unique, A::Error> {
        use de::VariantAccess;
        let (_, v): (de::IgnoredAny, _) = data.variant()?;
        v.newtype_variant::<Unique>()
    }
}

/// A mapping's key, refused when `.0` already holds it. The error comes from the key's own
/// deserialisation, so serde_yaml_ng gives it the key's position.
struct Key<'a>(&'a mut HashSet<String>);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(KeyVisitor(self.0))
    }
}

struct KeyVisitor<'a>(&'a mut HashSet<String>);

impl KeyVisitor<'_> {
    fn key<E: de::Error>(self, k: String) -> Result<(), E> {
        if self.0.contains(&k) {
            return Err(E::custom(format!("{DUPLICATE}{k}'")));
        }
        self.0.insert(k);
        Ok(())
    }
}

impl<'de> Visitor<'de> for KeyVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping key")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.key(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.key(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.key(v.to_string())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<(), E> {
        self.key(v.to_string())
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<(), E> {
        self.key(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.key(v.to_string())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.key(v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.key("null".into())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.key("null".into())
    }
    /// A collection or tagged value as a key (rare): its own keys are checked, the key itself
    /// is not compared.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        ValueVisitor.visit_seq(seq).map(|_| ())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        ValueVisitor.visit_map(map).map(|_| ())
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        ValueVisitor.visit_enum(data).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_named_with_their_line_at_any_depth() {
        assert_eq!(
            check_unique_keys("a: 1\nb: [1, 1]\nc: {x: 1, y: 1}\n"),
            Ok(())
        );
        let e = check_unique_keys("anchor: /a\nstate: []\nmembers: []\nstate:\n  - topic: /b\n")
            .unwrap_err();
        assert!(
            e.contains("duplicate key 'state'") && e.contains("line 4 column 1"),
            "{e}"
        );
        let e = check_unique_keys(
            "members:\n  - name: g\n    topics: [/a]\n    policy: exact\n    topics: [/b]\n",
        )
        .unwrap_err();
        assert!(
            e.starts_with("members[0]: duplicate key 'topics'") && e.contains("line 5 column 5"),
            "{e}"
        );
        // Flow mappings, quoted keys, and keys that only look different.
        let e = check_unique_keys("tf: {target_frame: a, \"target_frame\": b}\n").unwrap_err();
        assert!(
            e.contains("duplicate key 'target_frame'") && e.contains("line 1"),
            "{e}"
        );
        let e = check_unique_keys("1: a\n\"1\": b\n").unwrap_err();
        assert!(
            e.contains("duplicate key '1'") && e.contains("line 2"),
            "{e}"
        );
        // The same key in different mappings is fine; not YAML is left to the real parser.
        assert_eq!(check_unique_keys("- {a: 1}\n- {a: 2}\n"), Ok(()));
        assert_eq!(check_unique_keys("a: [\n"), Ok(()));
        assert_eq!(check_unique_keys(""), Ok(()));
    }
}
