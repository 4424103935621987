//! Merging the config sources in precedence order — built-in default < file < env
//! (`KASTLE_CFG_*`) < `--override key=value` — into one key → (value, source) map, rejecting
//! unknown keys and ill-typed values as they are met. The first error wins, in a fixed order:
//! file (in file order), then env (sorted by variable name), then overrides (in order).
//! Cross-key checks and the typed view happen afterwards in `validate`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::defs::{self, ConfigKey};
use crate::config::error::ConfigError;
use crate::config::parse::{read_config_file, render_raw};
use crate::config::value::{parse_value, Source, Value};
use crate::config::KafkaConfig;

/// Prefix of environment variables that set config keys.
pub const ENV_PREFIX: &str = "KASTLE_CFG_";

/// Everything the broker's config can come from. The caller fills it from the command line and
/// `std::env::vars()`; variables without the `KASTLE_CFG_` prefix are ignored.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// `--config` file: YAML if it ends in `.yaml`/`.yml`, else Java `.properties`.
    pub file: Option<PathBuf>,
    /// Environment variables as (name, value).
    pub env: Vec<(String, String)>,
    /// `--override` arguments, each `key=value`, applied in order.
    pub overrides: Vec<String>,
}

/// One key's effective value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub value: Value,
    pub source: Source,
}

pub(crate) type Entries = BTreeMap<String, Entry>;

/// Loads, merges and validates the broker config.
pub fn load(sources: &ConfigSources) -> Result<KafkaConfig, ConfigError> {
    let mut entries = defaults()?;
    if let Some(path) = &sources.file {
        let origin = Source::File(path.clone());
        for setting in read_config_file(path)? {
            let def = known(&setting.key, &origin)?;
            let raw = render_raw(def, &setting.key, &setting.value, path)?;
            set(&mut entries, def, &setting.key, raw.as_deref(), origin.clone())?;
        }
    }
    let mut env: Vec<&(String, String)> = sources
        .env
        .iter()
        .filter(|(name, _)| name.starts_with(ENV_PREFIX))
        .collect();
    env.sort();
    for (name, value) in env {
        let origin = Source::Env(name.clone());
        let suffix = &name[ENV_PREFIX.len()..];
        let key = defs::key_for_env_suffix(suffix).map_err(|derived| ConfigError::UnknownKey {
            suggestion: defs::suggest(&derived).map(str::to_string),
            key: derived,
            origin: origin.clone(),
        })?;
        let def = known(&key, &origin)?;
        set(&mut entries, def, &key, Some(value), origin)?;
    }
    for arg in &sources.overrides {
        let (key, value) = split_override(arg)?;
        let def = known(key, &Source::Override)?;
        set(&mut entries, def, key, Some(value), Source::Override)?;
    }
    crate::config::validate::build(entries)
}

/// `key=value` pairs applied as `--override`s (for tests and embedding).
pub(crate) fn load_pairs(pairs: &[(&str, &str)]) -> Result<KafkaConfig, ConfigError> {
    let mut entries = defaults()?;
    for (key, value) in pairs {
        let def = known(key, &Source::Override)?;
        set(&mut entries, def, key, Some(value), Source::Override)?;
    }
    crate::config::validate::build(entries)
}

/// Every table key at its Kafka 3.9 default.
fn defaults() -> Result<Entries, ConfigError> {
    let mut entries = Entries::new();
    for def in defs::all_keys() {
        set(&mut entries, def, def.name, def.default, Source::Default)?;
    }
    Ok(entries)
}

fn known(key: &str, origin: &Source) -> Result<&'static ConfigKey, ConfigError> {
    defs::resolve(key).ok_or_else(|| ConfigError::UnknownKey {
        key: key.to_string(),
        origin: origin.clone(),
        suggestion: defs::suggest(key).map(str::to_string),
    })
}

/// Parses `raw` (`None` = null) for `def` and records it under `key`, replacing lower
/// precedence sources.
fn set(
    entries: &mut Entries,
    def: &ConfigKey,
    key: &str,
    raw: Option<&str>,
    source: Source,
) -> Result<(), ConfigError> {
    let value = match raw {
        Some(raw) => parse_value(def, key, raw, &source)?,
        None => Value::Null,
    };
    entries.insert(key.to_string(), Entry { value, source });
    Ok(())
}

/// `key=value` → (trimmed key, value); splits at the first `=`, so values may contain `=`.
fn split_override(arg: &str) -> Result<(&str, &str), ConfigError> {
    match arg.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim(), value)),
        _ => Err(ConfigError::MalformedOverride { arg: arg.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_splits_at_the_first_equals_sign() {
        assert_eq!(split_override("a.b=c=d").ok(), Some(("a.b", "c=d")));
        assert_eq!(split_override(" a = b").ok(), Some(("a", " b")));
        assert!(split_override("=b").is_err());
        assert!(split_override("broker.id").is_err());
    }

    #[test]
    fn defaults_cover_every_table_key() {
        let entries = defaults().expect("defaults parse");
        assert_eq!(entries.len(), defs::all_keys().count());
        assert!(entries.values().all(|e| e.source == Source::Default));
    }
}
