//! `ConfigError`: every way loading the broker config can fail, each with the key, the value and
//! where it came from, so the operator can fix the right file, variable or flag. The binary maps
//! any of these to exit code 2; this module only returns them.

use std::path::PathBuf;

use crate::config::value::Source;
use crate::config::SecurityProtocol;

/// A config that cannot be loaded. Messages name the key, the offending value and its origin.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A key that is not a Kafka broker property (nor a `listener.name.*` override).
    #[error(
        "unknown config key \"{key}\" ({}){}",
        .origin.phrase(),
        suggestion_phrase(.suggestion)
    )]
    UnknownKey {
        /// The key as given (for env, the property name derived from the variable).
        key: String,
        /// Where the key was set.
        origin: Source,
        /// The closest known key, when one is reasonably close.
        suggestion: Option<String>,
    },

    /// A value that does not parse as the key's type or fails its validator.
    #[error("invalid value \"{value}\" for \"{key}\" ({}): expected {expected}", .origin.phrase())]
    InvalidValue {
        key: String,
        /// The value as given (passwords are never echoed: they are shown as `[hidden]`).
        value: String,
        /// What would have been accepted, e.g. `an int`, `a value in [1, 2147483647]`.
        expected: String,
        origin: Source,
    },

    /// Two keys whose values contradict each other (Kafka's cross-key `require`s).
    #[error(
        "\"{key}\" ({}) conflicts with \"{other}\" ({}): {detail}",
        .key_origin.phrase(),
        .other_origin.phrase()
    )]
    Conflict {
        /// Always a table key, hence `'static` (keeps `ConfigError` small).
        key: &'static str,
        key_origin: Source,
        other: &'static str,
        other_origin: Source,
        /// What is wrong and how to fix it.
        detail: String,
    },

    /// Listeners (or the inter-broker listener) whose security protocol kastle cannot serve
    /// there: refused at start-up rather than served with less security than the protocol names.
    #[error(
        "kastle cannot serve {}; kastle refuses to start rather than serve a listener with less \
         security than it names",
        .listeners.join("; ")
    )]
    UnservedProtocol {
        /// One phrase per offending listener, saying what it is and why it is not served, e.g.
        /// `the inter-broker listener "INTERNAL" (set by inter.broker.listener.name, ...): ...`.
        listeners: Vec<String>,
    },

    /// A TLS listener (SSL, SASL_SSL) whose TLS settings cannot work (no keystore, a bad
    /// `ssl.*` value).
    #[error("cannot serve {protocol} listener \"{listener}\": {problem}")]
    TlsListener {
        listener: String,
        protocol: crate::config::SecurityProtocol,
        problem: String,
    },

    /// The inter-broker listener is a TLS one, but brokers could not verify each other (no
    /// truststore, a bad `ssl.*` value).
    #[error(
        "brokers cannot connect to each other on the inter-broker listener \"{listener}\" ({protocol}): {problem}"
    )]
    InterBrokerTls {
        listener: String,
        protocol: SecurityProtocol,
        problem: String,
    },

    /// A SASL listener or the inter-broker SASL login that kastle cannot serve as configured
    /// (an unserved mechanism, PLAIN without users, no inter-broker login).
    #[error("SASL is not served as configured: \"{key}\": {reason}")]
    Sasl { key: String, reason: String },

    /// A required key with no default was not set anywhere.
    #[error(
        "missing required config \"{key}\": set it in the config file, with \
         KASTLE_CFG_{} or with --override {key}=...",
        crate::config::defs::env_suffix(.key)
    )]
    Missing { key: String },

    /// A `--override` argument that is not `key=value`.
    #[error("malformed --override \"{arg}\": expected key=value")]
    MalformedOverride { arg: String },

    /// The config file could not be read.
    #[error("cannot read config file {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The config file is not valid YAML / `.properties`, or its shape is wrong.
    #[error("syntax error in {}{}: {message}", .path.display(), line_phrase(*.line))]
    Syntax {
        path: PathBuf,
        /// 1-based line, when the parser knows it.
        line: Option<usize>,
        message: String,
    },
}

fn suggestion_phrase(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean \"{s}\"?"),
        None => String::new(),
    }
}

fn line_phrase(line: Option<usize>) -> String {
    match line {
        Some(l) => format!(" at line {l}"),
        None => String::new(),
    }
}
