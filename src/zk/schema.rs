//! Validation of znode payloads against the JSON Schemas in `zk-schema/`, which are compiled
//! into the binary so `kastle zk check` works anywhere.
//!
//! The rule (also in `zk-schema/README.md`): empty data is JSON `null`; data that is not JSON
//! (Kafka writes a few raw strings, e.g. ACL change notifications) is validated as a JSON
//! string holding the text; anything else is parsed as JSON.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::paths::ZNodeKind;

macro_rules! schema_sources {
    ($($name:literal),* $(,)?) => {
        /// (schema name, schema text) for every znode kind.
        pub const SCHEMA_SOURCES: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../zk-schema/", $name, ".schema.json")))),*
        ];
    };
}

schema_sources!(
    "empty",
    "broker-registration",
    "controller",
    "controller-epoch",
    "topic-assignment",
    "partition-state",
    "isr-change-notification",
    "log-dir-event-notification",
    "reassign-partitions",
    "preferred-replica-election",
    "entity-config",
    "config-change-notification",
    "cluster-id",
    "producer-id-block",
    "feature",
    "acl",
    "acl-change-notification",
    "acl-extended-change-notification",
    "delegation-token",
    "delegation-token-change",
    "consumer-offset",
);

/// Why a schema could not be used (a bug in `zk-schema/`, caught by the tests).
#[derive(Debug, Clone, thiserror::Error)]
#[error("zk-schema/{name}.schema.json is unusable: {reason}")]
pub struct SchemaError {
    pub name: &'static str,
    pub reason: String,
}

type Validators = HashMap<&'static str, jsonschema::Validator>;

fn validators() -> Result<&'static Validators, SchemaError> {
    static VALIDATORS: OnceLock<Result<Validators, SchemaError>> = OnceLock::new();
    VALIDATORS
        .get_or_init(|| {
            let mut map = HashMap::new();
            for (name, text) in SCHEMA_SOURCES {
                let err = |reason: String| SchemaError { name, reason };
                let schema: serde_json::Value = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
                let validator = jsonschema::draft202012::new(&schema).map_err(|e| err(e.to_string()))?;
                map.insert(*name, validator);
            }
            Ok(map)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Turns raw znode data into the JSON value the schemas describe.
pub fn to_instance(data: &[u8]) -> serde_json::Value {
    if data.is_empty() {
        return serde_json::Value::Null;
    }
    serde_json::from_slice(data)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(data).into_owned()))
}

/// Validates `data` as a znode of `kind`; `Ok(violations)`, empty when valid.
pub fn validate(kind: ZNodeKind, data: &[u8]) -> Result<Vec<String>, SchemaError> {
    let name = kind.schema_name();
    let validator = validators()?.get(name).ok_or_else(|| SchemaError {
        name,
        reason: "no such schema compiled in".into(),
    })?;
    let instance = to_instance(data);
    Ok(validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path.to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_compiled_schema() {
        for kind in ZNodeKind::ALL {
            assert!(validate(kind, b"").is_ok(), "{kind:?}");
        }
    }

    #[test]
    fn non_json_data_is_validated_as_a_string() {
        assert_eq!(to_instance(b"Topic:orders"), serde_json::json!("Topic:orders"));
        assert_eq!(to_instance(b""), serde_json::Value::Null);
        assert_eq!(to_instance(b"7"), serde_json::json!(7));
    }
}
