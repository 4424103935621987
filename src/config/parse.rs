//! Reading the `--config` file into raw settings. `.yaml`/`.yml` files are a flat YAML mapping of
//! Kafka property names to scalars (also accepted: the same mapping under one top-level `broker:`
//! key); every other extension is a Java `.properties` file (see `properties`). YAML sequences
//! (for list keys) and mappings (for `listener.security.protocol.map`) are sugar rendered back to
//! Kafka's comma syntax. Reads only the one file it is given.

use std::path::{Path, PathBuf};

use crate::config::defs::{ConfigKey, ConfigType};
use crate::config::error::ConfigError;
use crate::config::properties::parse_properties;
use crate::config::value::Source;

/// A value as the file spelled it, before typing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawValue {
    /// YAML `null` / `~` / empty value.
    Null,
    Scalar(String),
    /// A YAML sequence of scalars.
    Seq(Vec<String>),
    /// A YAML mapping of scalars to scalars.
    Map(Vec<(String, String)>),
    /// Anything deeper (nested collections, tagged values); always rejected.
    Nested,
}

/// One setting from the file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileSetting {
    pub key: String,
    pub value: RawValue,
}

/// Reads and parses the config file, choosing the format by extension.
pub(crate) fn read_config_file(path: &Path) -> Result<Vec<FileSetting>, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if is_yaml(path) {
        let text = String::from_utf8(bytes).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            line: None,
            message: format!("YAML must be UTF-8: {e}"),
        })?;
        parse_yaml(&text, path)
    } else {
        // Kafka loads properties through an InputStream, i.e. as ISO-8859-1. Accept UTF-8 (what
        // editors write today) and fall back to Latin-1 for files that are not valid UTF-8.
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => e.into_bytes().iter().map(|b| char::from(*b)).collect(),
        };
        let lines = parse_properties(&text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            line: Some(e.line),
            message: e.message,
        })?;
        Ok(lines
            .into_iter()
            .map(|p| FileSetting {
                key: p.key,
                value: RawValue::Scalar(p.value),
            })
            .collect())
    }
}

fn is_yaml(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// Parses YAML text whose top level maps property names to values.
pub(crate) fn parse_yaml(text: &str, path: &Path) -> Result<Vec<FileSetting>, ConfigError> {
    let syntax = |line: Option<usize>, message: String| ConfigError::Syntax {
        path: path.to_path_buf(),
        line,
        message,
    };
    let doc: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|e| syntax(e.location().map(|l| l.line()), e.to_string()))?;
    let mapping = match doc {
        serde_yaml::Value::Null => return Ok(Vec::new()),
        serde_yaml::Value::Mapping(m) => m,
        _ => {
            return Err(syntax(
                Some(1),
                "the top level must be a mapping of Kafka property names to values, \
                 e.g. \"broker.id\": 1"
                    .to_string(),
            ))
        }
    };
    // ecosystem.md's layout nests the same flat mapping under `broker:`.
    let mapping = match broker_section(&mapping) {
        Some(inner) => inner.clone(),
        None => mapping,
    };
    Ok(mapping
        .iter()
        .map(|(k, v)| FileSetting {
            key: scalar_text(k).unwrap_or_else(|| "<non-scalar key>".to_string()),
            value: raw_value(v),
        })
        .collect())
}

fn broker_section(mapping: &serde_yaml::Mapping) -> Option<&serde_yaml::Mapping> {
    if mapping.len() != 1 {
        return None;
    }
    match mapping.get("broker") {
        Some(serde_yaml::Value::Mapping(inner)) => Some(inner),
        _ => None,
    }
}

fn raw_value(v: &serde_yaml::Value) -> RawValue {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => RawValue::Null,
        Y::Sequence(items) => items
            .iter()
            .map(scalar_text)
            .collect::<Option<Vec<_>>>()
            .map_or(RawValue::Nested, RawValue::Seq),
        Y::Mapping(m) => m
            .iter()
            .map(|(k, v)| Some((scalar_text(k)?, scalar_text(v)?)))
            .collect::<Option<Vec<_>>>()
            .map_or(RawValue::Nested, RawValue::Map),
        Y::Tagged(_) => RawValue::Nested,
        scalar => scalar_text(scalar).map_or(RawValue::Nested, RawValue::Scalar),
    }
}

/// A YAML scalar as Kafka text (`true`, `1`, `0.5`, strings verbatim); `None` if not a scalar.
fn scalar_text(v: &serde_yaml::Value) -> Option<String> {
    use serde_yaml::Value as Y;
    match v {
        Y::String(s) => Some(s.clone()),
        Y::Bool(b) => Some(b.to_string()),
        Y::Number(n) => Some(n.to_string()),
        Y::Null => Some(String::new()),
        _ => None,
    }
}

/// Turns a file value into Kafka's text form for `def` (`None` = null). Sequences are allowed for
/// list keys, mappings for `listener.security.protocol.map`, null only for keys whose default is
/// null.
pub(crate) fn render_raw(
    def: &ConfigKey,
    key: &str,
    raw: &RawValue,
    path: &Path,
) -> Result<Option<String>, ConfigError> {
    let invalid = |value: &str, expected: &str| ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
        origin: Source::File(PathBuf::from(path)),
    };
    match raw {
        RawValue::Scalar(s) => Ok(Some(s.clone())),
        RawValue::Null if def.default.is_none() => Ok(None),
        RawValue::Null => Err(invalid("null", "a value (this key has a non-null default; omit it)")),
        RawValue::Seq(items) if def.ty == ConfigType::List => Ok(Some(items.join(","))),
        RawValue::Seq(items) => Err(invalid(
            &format!("[{}]", items.join(", ")),
            "a single value (only list keys take a YAML sequence)",
        )),
        RawValue::Map(pairs) if key == "listener.security.protocol.map" => Ok(Some(
            pairs
                .iter()
                .map(|(k, v)| format!("{k}:{v}"))
                .collect::<Vec<_>>()
                .join(","),
        )),
        RawValue::Map(_) => Err(invalid("<a YAML mapping>", "a single value")),
        RawValue::Nested => Err(invalid("<nested YAML>", "a scalar or a list of scalars")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Result<Vec<FileSetting>, ConfigError> {
        parse_yaml(text, Path::new("broker.yaml"))
    }

    fn scalar(key: &str, value: &str) -> FileSetting {
        FileSetting {
            key: key.to_string(),
            value: RawValue::Scalar(value.to_string()),
        }
    }

    #[test]
    fn yaml_scalars_become_kafka_text_in_file_order() {
        let settings = yaml("\"broker.id\": 1\nlog.dirs: /data/a,/data/b\ndelete.topic.enable: false\nlog.cleaner.min.cleanable.ratio: 0.25\n")
            .expect("valid");
        assert_eq!(
            settings,
            vec![
                scalar("broker.id", "1"),
                scalar("log.dirs", "/data/a,/data/b"),
                scalar("delete.topic.enable", "false"),
                scalar("log.cleaner.min.cleanable.ratio", "0.25"),
            ]
        );
    }

    #[test]
    fn yaml_under_a_single_broker_section_is_the_same_flat_mapping() {
        let settings = yaml("broker:\n  \"broker.id\": 2\n").expect("valid");
        assert_eq!(settings, vec![scalar("broker.id", "2")]);
    }

    #[test]
    fn an_empty_yaml_file_has_no_settings() {
        assert_eq!(yaml("").expect("valid"), Vec::new());
        assert_eq!(yaml("# only a comment\n").expect("valid"), Vec::new());
    }

    #[test]
    fn yaml_that_is_not_a_mapping_or_does_not_parse_is_a_syntax_error() {
        let err = yaml("- a\n- b\n").expect_err("not a mapping");
        assert!(err.to_string().contains("top level must be a mapping"), "{err}");
        let err = yaml("broker.id: 1\nlisteners: [unclosed\n").expect_err("bad yaml");
        assert!(matches!(err, ConfigError::Syntax { line: Some(_), .. }), "{err:?}");
    }

    #[test]
    fn duplicate_yaml_keys_are_a_syntax_error() {
        let err = yaml("broker.id: 1\nbroker.id: 2\n").expect_err("duplicate");
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err:?}");
    }
}
