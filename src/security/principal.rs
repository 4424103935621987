//! Kafka's `KafkaPrincipal`: a type and a name, written `User:alice`. Connections that did not
//! authenticate (PLAINTEXT listeners, TLS without a client certificate) are `User:ANONYMOUS`,
//! as in Kafka.

use std::fmt;
use std::str::FromStr;

/// A principal as ACLs and `super.users` name it: `<type>:<name>`, e.g. `User:alice`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

impl KafkaPrincipal {
    /// Kafka's only built-in principal type.
    pub const USER_TYPE: &'static str = "User";
    /// The name of an unauthenticated connection's principal.
    pub const ANONYMOUS_NAME: &'static str = "ANONYMOUS";

    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> Self {
        Self {
            principal_type: Self::USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    /// `User:ANONYMOUS`.
    pub fn anonymous() -> Self {
        Self::user(Self::ANONYMOUS_NAME)
    }

    pub fn is_anonymous(&self) -> bool {
        self.principal_type == Self::USER_TYPE && self.name == Self::ANONYMOUS_NAME
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// A principal string without the `<type>:` prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a principal: expected <type>:<name>, e.g. User:alice")]
pub struct PrincipalParseError {
    pub input: String,
}

impl FromStr for KafkaPrincipal {
    type Err = PrincipalParseError;

    /// Kafka's `SecurityUtils.parseKafkaPrincipal`: split at the first `:`; both parts non-empty.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            Some((t, n)) if !t.is_empty() && !n.is_empty() => Ok(Self {
                principal_type: t.to_string(),
                name: n.to_string(),
            }),
            _ => Err(PrincipalParseError { input: s.to_string() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_kafkas_form() {
        let p: KafkaPrincipal = "User:CN=alice,OU=eng".parse().expect("a principal");
        assert_eq!(p.principal_type, "User");
        assert_eq!(p.name, "CN=alice,OU=eng");
        assert_eq!(p.to_string(), "User:CN=alice,OU=eng");
        assert!("alice".parse::<KafkaPrincipal>().is_err());
        assert!("User:".parse::<KafkaPrincipal>().is_err());
        assert!(KafkaPrincipal::anonymous().is_anonymous());
        assert!(!KafkaPrincipal::user("bob").is_anonymous());
    }
}
