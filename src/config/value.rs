//! Typed config values (`Value`), where each one came from (`Source`), and the conversion of a
//! raw string into a `Value` following Kafka's `ConfigDef.parseType` rules (trimmed input,
//! case-insensitive booleans, comma lists split on `\s*,\s*`) plus the key's validator.

use std::fmt;
use std::path::PathBuf;

use crate::config::defs::{ConfigKey, ConfigType, Validator};
use crate::config::error::ConfigError;

/// A parsed config value. `Null` is Kafka's "no value" (e.g. `log.dirs` unset).
#[derive(Clone, PartialEq)]
pub enum Value {
    Int(i32),
    Long(i64),
    Short(i16),
    Double(f64),
    Bool(bool),
    /// `String` and `Class` keys.
    Str(String),
    /// Comma-separated keys, already split and trimmed.
    List(Vec<String>),
    /// Secret; never shown by `Display` or `Debug`.
    Password(String),
    Null,
}

impl fmt::Display for Value {
    /// Kafka's input syntax (lists comma-joined), except passwords, which read `[hidden]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Long(v) => write!(f, "{v}"),
            Value::Short(v) => write!(f, "{v}"),
            Value::Double(v) => write!(f, "{v:?}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(v) => f.write_str(v),
            Value::List(v) => f.write_str(&v.join(",")),
            Value::Password(_) => f.write_str("[hidden]"),
            Value::Null => f.write_str("null"),
        }
    }
}

impl fmt::Debug for Value {
    /// Like `Display` but tagged with the variant; masks passwords so a `{:?}` of the whole
    /// config can be logged safely.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = match self {
            Value::Int(_) => "Int",
            Value::Long(_) => "Long",
            Value::Short(_) => "Short",
            Value::Double(_) => "Double",
            Value::Bool(_) => "Bool",
            Value::Str(_) => "Str",
            Value::List(_) => "List",
            Value::Password(_) => "Password",
            Value::Null => return f.write_str("Null"),
        };
        write!(f, "{tag}({self})")
    }
}

/// Where a key's effective value came from, in increasing precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Kafka 3.9's built-in default.
    Default,
    /// The `--config` file.
    File(PathBuf),
    /// A `KASTLE_CFG_*` environment variable (its full name).
    Env(String),
    /// A `--override key=value` argument.
    Override,
    /// A dynamic broker config read from ZooKeeper (the znode's path).
    Dynamic(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Override => f.write_str("--override"),
            Source::Dynamic(path) => write!(f, "dynamic {path}"),
        }
    }
}

impl Source {
    /// The parenthesised origin used in error messages: `in config/broker.yaml`,
    /// `from env KASTLE_CFG_BROKER_ID`, `from --override`, `built-in default`.
    pub fn phrase(&self) -> String {
        match self {
            Source::Default => "built-in default".to_string(),
            Source::File(p) => format!("in {}", p.display()),
            Source::Env(var) => format!("from env {var}"),
            Source::Override => "from --override".to_string(),
            Source::Dynamic(path) => format!("from ZooKeeper {path}"),
        }
    }
}

/// Parses `raw` as the type of `def` and applies its validator. `name` is the key as given
/// (differs from `def.name` only for `listener.name.*` overrides).
pub(crate) fn parse_value(def: &ConfigKey, name: &str, raw: &str, origin: &Source) -> Result<Value, ConfigError> {
    let trimmed = raw.trim();
    let invalid = |expected: String| ConfigError::InvalidValue {
        key: name.to_string(),
        value: if def.ty == ConfigType::Password {
            "[hidden]".to_string()
        } else {
            raw.to_string()
        },
        expected,
        origin: origin.clone(),
    };
    let value = match def.ty {
        ConfigType::Int => Value::Int(trimmed.parse().map_err(|_| invalid("an int".into()))?),
        ConfigType::Long => Value::Long(trimmed.parse().map_err(|_| invalid("a long".into()))?),
        ConfigType::Short => Value::Short(trimmed.parse().map_err(|_| invalid("a short".into()))?),
        ConfigType::Double => Value::Double(trimmed.parse().map_err(|_| invalid("a double".into()))?),
        ConfigType::Bool => match trimmed.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(invalid("true or false".into())),
        },
        ConfigType::String => Value::Str(trimmed.to_string()),
        ConfigType::Class => {
            if !is_java_class_name(trimmed) {
                return Err(invalid("a Java class name like org.example.MyClass".into()));
            }
            Value::Str(trimmed.to_string())
        }
        ConfigType::List => Value::List(split_list(trimmed)),
        ConfigType::Password => Value::Password(trimmed.to_string()),
    };
    match check(&def.validator, def.ty, &value) {
        Ok(()) => Ok(value),
        Err(expected) => Err(invalid(expected)),
    }
}

/// Kafka's LIST parsing: empty ⇒ empty list, else split on commas with surrounding blanks.
pub(crate) fn split_list(trimmed: &str) -> Vec<String> {
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split(',').map(|s| s.trim().to_string()).collect()
}

fn is_java_class_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let mut chars = part.chars();
            matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_' || c == '$')
                && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
}

/// The validator's verdict; `Err` carries the "expected ..." text.
fn check(validator: &Validator, ty: ConfigType, value: &Value) -> Result<(), String> {
    let as_i64 = match value {
        Value::Int(v) => Some(i64::from(*v)),
        Value::Long(v) => Some(*v),
        Value::Short(v) => Some(i64::from(*v)),
        _ => None,
    };
    match validator {
        Validator::None => Ok(()),
        Validator::AtLeast(min) => check_range(as_i64, *min, type_max(ty)),
        Validator::Between(min, max) => check_range(as_i64, *min, *max),
        Validator::BetweenF(min, max) => match value {
            Value::Double(v) if *v >= *min && *v <= *max => Ok(()),
            _ => Err(format!("a value in [{min:?}, {max:?}]")),
        },
        Validator::OneOf(allowed) => match value {
            Value::Str(s) if allowed.contains(&s.as_str()) => Ok(()),
            _ => Err(format!("one of {}", allowed.join(", "))),
        },
        Validator::EachOf(allowed) => match value {
            Value::List(items) if items.iter().all(|i| allowed.contains(&i.as_str())) => Ok(()),
            _ => Err(format!("a comma-separated list of {}", allowed.join(", "))),
        },
        Validator::NonEmpty => match value {
            Value::Str(s) | Value::Password(s) if s.is_empty() => Err("a non-empty string".into()),
            Value::List(l) if l.is_empty() => Err("a non-empty list".into()),
            _ => Ok(()),
        },
        Validator::Version => match value {
            Value::Str(s) if is_kafka_version(s) => Ok(()),
            _ => Err("a Kafka version like 3.9-IV0 or 2.8".into()),
        },
        Validator::HostPort => match value {
            Value::Str(s) if crate::config::listeners::parse_host_port(s).is_some() => Ok(()),
            _ => Err("host:port (host may be empty or [ipv6])".into()),
        },
    }
}

fn check_range(v: Option<i64>, min: i64, max: i64) -> Result<(), String> {
    match v {
        Some(v) if v >= min && v <= max => Ok(()),
        _ => Err(format!("a value in [{min}, {max}]")),
    }
}

fn type_max(ty: ConfigType) -> i64 {
    match ty {
        ConfigType::Short => i64::from(i16::MAX),
        ConfigType::Int => i64::from(i32::MAX),
        _ => i64::MAX,
    }
}

/// `MetadataVersion` spellings Kafka accepts: `2.8`, `0.10.2`, `3.9-IV0`, `0.10.0-IV1`.
fn is_kafka_version(s: &str) -> bool {
    let (numbers, iv) = match s.split_once("-IV") {
        Some((n, iv)) => (n, Some(iv)),
        None => (s, None),
    };
    let parts: Vec<&str> = numbers.split('.').collect();
    let numeric = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit());
    (2..=3).contains(&parts.len()) && parts.iter().all(|p| numeric(p)) && iv.is_none_or(numeric)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::defs;

    fn parse(key: &str, raw: &str) -> Result<Value, ConfigError> {
        let def = defs::resolve(key).expect("known key");
        parse_value(def, key, raw, &Source::Override)
    }

    #[test]
    fn values_are_trimmed_and_booleans_are_case_insensitive() {
        assert_eq!(parse("broker.id", " 7 ").ok(), Some(Value::Int(7)));
        assert_eq!(parse("delete.topic.enable", "TRUE").ok(), Some(Value::Bool(true)));
        assert_eq!(
            parse("log.cleanup.policy", " compact , delete ").ok(),
            Some(Value::List(vec!["compact".into(), "delete".into()]))
        );
    }

    #[test]
    fn a_list_of_allowed_words_rejects_other_words() {
        let err = parse("log.cleanup.policy", "compact,shred").expect_err("invalid");
        assert!(
            err.to_string().contains("a comma-separated list of compact, delete"),
            "{err}"
        );
    }

    #[test]
    fn password_values_are_masked_in_display_debug_and_errors() {
        let v = parse("ssl.keystore.password", "s3cret").expect("valid");
        assert_eq!(v.to_string(), "[hidden]");
        assert!(!format!("{v:?}").contains("s3cret"));
    }

    #[test]
    fn kafka_version_strings_are_recognised() {
        for ok in ["3.9-IV0", "2.8", "0.10.2", "0.10.0-IV1", "3.0"] {
            assert!(is_kafka_version(ok), "{ok}");
        }
        for bad in ["3", "three", "3.9-IV", "3.9-ivx", "", "1.2.3.4"] {
            assert!(!is_kafka_version(bad), "{bad}");
        }
    }

    #[test]
    fn class_names_must_look_like_java_classes() {
        assert!(is_java_class_name("kafka.security.authorizer.AclAuthorizer"));
        assert!(!is_java_class_name("not a class"));
        assert!(!is_java_class_name("a..b"));
    }
}
