//! The SASL/PLAIN server (RFC 4616) as Kafka's `PlainSaslServer` with its default callback
//! handler serves it: one message `authzid NUL authcid NUL passwd`, checked against the
//! `user_<name>="<password>"` options of the listener's `PlainLoginModule` JAAS entry.

use std::collections::BTreeMap;

use super::scram::constant_time_eq;

/// Why a PLAIN message was refused; the text is what the client sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlainError {
    #[error("Invalid SASL/PLAIN response: expected 3 tokens, got {0}")]
    Malformed(usize),
    #[error("Authentication failed: username not specified")]
    NoUser,
    #[error("Authentication failed: password not specified")]
    NoPassword,
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthorizationIdMismatch,
    #[error("Authentication failed: Invalid username or password")]
    InvalidCredentials,
}

/// The users a PLAIN listener accepts: name → password (secrets; `Debug` shows names only).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers(pub BTreeMap<String, String>);

impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PlainUsers")
            .field(&self.0.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PlainUsers {
    /// The `user_<name>` options of a login module.
    pub fn from_options(options: &BTreeMap<String, String>) -> Self {
        Self(
            options
                .iter()
                .filter_map(|(k, v)| k.strip_prefix("user_").map(|name| (name.to_string(), v.clone())))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks one PLAIN message; returns the authenticated user.
    pub fn authenticate(&self, message: &[u8]) -> Result<String, PlainError> {
        let text = String::from_utf8_lossy(message);
        let tokens: Vec<&str> = text.split('\0').collect();
        let [authzid, user, password] = tokens[..] else {
            return Err(PlainError::Malformed(tokens.len()));
        };
        if user.is_empty() {
            return Err(PlainError::NoUser);
        }
        if password.is_empty() {
            return Err(PlainError::NoPassword);
        }
        if !authzid.is_empty() && authzid != user {
            return Err(PlainError::AuthorizationIdMismatch);
        }
        match self.0.get(user) {
            Some(expected) if constant_time_eq(expected.as_bytes(), password.as_bytes()) => Ok(user.to_string()),
            _ => Err(PlainError::InvalidCredentials),
        }
    }
}

/// The client's PLAIN message.
pub fn client_message(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> PlainUsers {
        PlainUsers::from_options(&BTreeMap::from([
            ("username".to_string(), "admin".to_string()),
            ("user_alice".to_string(), "alice-secret".to_string()),
        ]))
    }

    #[test]
    fn the_right_password_authenticates_and_others_do_not() {
        let u = users();
        assert_eq!(u.0.len(), 1, "username= is the client side, not a user");
        assert_eq!(
            u.authenticate(&client_message("alice", "alice-secret")),
            Ok("alice".into())
        );
        assert_eq!(u.authenticate(b"alice\0alice\0alice-secret"), Ok("alice".into()));
        assert_eq!(
            u.authenticate(&client_message("alice", "wrong")),
            Err(PlainError::InvalidCredentials)
        );
        assert_eq!(
            u.authenticate(&client_message("bob", "alice-secret")),
            Err(PlainError::InvalidCredentials)
        );
        assert_eq!(
            u.authenticate(b"bob\0alice\0alice-secret"),
            Err(PlainError::AuthorizationIdMismatch)
        );
        assert_eq!(u.authenticate(b"alice"), Err(PlainError::Malformed(1)));
        assert_eq!(u.authenticate(b"\0\0pw"), Err(PlainError::NoUser));
    }
}
