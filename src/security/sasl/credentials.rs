//! SCRAM credentials as Kafka's ZooKeeper mode stores them, and every broker's cache of them.
//!
//! `/config/users/<u>` holds `{"version":1,"config":{"SCRAM-SHA-256":"salt=<b64>,stored_key=<b64>,
//! server_key=<b64>,iterations=4096"}}` (Kafka's `ScramCredentialUtils`); an AlterUserScram-
//! Credentials or `kastle configs` write announces it with a `/config/changes` notification for
//! `users/<u>`. The [`CredentialCache`] is loaded at start-up and reloaded on every
//! notification ([`run`]); the authenticators read only the cache, never ZooKeeper.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::ScramMechanism;
use crate::zk::store::{ZkError, ZkStore};
use crate::zk::{KafkaZkClient, KafkaZkError};

/// A user's stored SCRAM credential for one mechanism (never the password).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// Derives the credential from a password (RFC 5802 §3: SaltedPassword, ClientKey,
    /// StoredKey = H(ClientKey), ServerKey).
    pub fn generate(mechanism: ScramMechanism, password: &str, salt: Vec<u8>, iterations: u32) -> Self {
        let salted = mechanism.salted_password(password, &salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        Self {
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(&salted, b"Server Key"),
            salt,
            iterations,
        }
    }

    /// The credential from a client's already salted password (AlterUserScramCredentials sends
    /// SaltedPassword, never the password).
    pub fn from_salted_password(mechanism: ScramMechanism, salted: &[u8], salt: Vec<u8>, iterations: u32) -> Self {
        let client_key = mechanism.hmac(salted, b"Client Key");
        Self {
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted, b"Server Key"),
            salt,
            iterations,
        }
    }

    /// A fresh random salt (Kafka's `ScramFormatter.secureRandomBytes`: 32 bytes from a nonce).
    pub fn random_salt() -> Vec<u8> {
        use rand::RngCore;
        let mut salt = vec![0u8; 32];
        rand::rng().fill_bytes(&mut salt);
        salt
    }

    /// Kafka's text form: `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`.
    pub fn to_kafka_string(&self) -> String {
        format!(
            "salt={},stored_key={},server_key={},iterations={}",
            B64.encode(&self.salt),
            B64.encode(&self.stored_key),
            B64.encode(&self.server_key),
            self.iterations
        )
    }

    /// Parses [`to_kafka_string`](Self::to_kafka_string)'s form, keys in any order.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut fields = BTreeMap::new();
        for part in text.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("invalid credential field {part:?}"))?;
            fields.insert(k.trim(), v.trim());
        }
        let b64 = |key: &str| -> Result<Vec<u8>, String> {
            let v = fields.get(key).ok_or_else(|| format!("missing {key}"))?;
            B64.decode(v).map_err(|e| format!("{key} is not base64: {e}"))
        };
        let iterations = fields
            .get("iterations")
            .ok_or("missing iterations")?
            .parse::<u32>()
            .map_err(|e| format!("invalid iterations: {e}"))?;
        Ok(Self {
            salt: b64("salt")?,
            stored_key: b64("stored_key")?,
            server_key: b64("server_key")?,
            iterations,
        })
    }
}

/// The SCRAM credentials in one `/config/users/<u>` config: mechanism keys only (the same
/// znode may hold quotas); an unparsable credential is skipped with a warning.
pub fn credentials_of(user: &str, config: &BTreeMap<String, String>) -> BTreeMap<ScramMechanism, ScramCredential> {
    let mut out = BTreeMap::new();
    for (key, value) in config {
        let Some(mechanism) = ScramMechanism::from_name(key) else {
            continue;
        };
        match ScramCredential::parse(value) {
            Ok(c) => {
                out.insert(mechanism, c);
            }
            Err(why) => tracing::warn!(%user, %mechanism, %why, "ignoring an unreadable SCRAM credential"),
        }
    }
    out
}

/// Every broker's copy of the SCRAM credentials (Kafka's `CredentialCache`).
#[derive(Debug, Default)]
pub struct CredentialCache {
    users: RwLock<HashMap<String, BTreeMap<ScramMechanism, ScramCredential>>>,
}

impl CredentialCache {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        let users = self.users.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        users.get(user).and_then(|m| m.get(&mechanism)).cloned()
    }

    /// Replaces one user's credentials (none: the user is gone).
    pub fn set_user(&self, user: &str, credentials: BTreeMap<ScramMechanism, ScramCredential>) {
        let mut users = self.users.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if credentials.is_empty() {
            users.remove(user);
        } else {
            users.insert(user.to_string(), credentials);
        }
    }

    /// Replaces every user's credentials at once.
    pub fn replace_all(&self, all: HashMap<String, BTreeMap<ScramMechanism, ScramCredential>>) {
        *self.users.write().unwrap_or_else(std::sync::PoisonError::into_inner) = all;
    }

    pub fn user_count(&self) -> usize {
        self.users
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

const USERS: &str = "/config/users";

/// Reads every `/config/users/<u>` into `cache`.
pub async fn load<S: ZkStore>(zk: &KafkaZkClient<S>, cache: &CredentialCache) -> Result<(), KafkaZkError> {
    let users = match zk.store().children(USERS).await {
        Ok(users) => users,
        Err(ZkError::NoNode { .. }) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut all = HashMap::new();
    for user in users {
        let config = zk.entity_config("users", &user).await?;
        let credentials = credentials_of(&user, &config);
        if !credentials.is_empty() {
            all.insert(user, credentials);
        }
    }
    cache.replace_all(all);
    Ok(())
}

/// Re-reads one user's `/config/users/<user>` into `cache` (the `/config/changes` listener
/// calls it for each `users/<user>` notification); no credentials left removes the user.
pub async fn reload_user<S: ZkStore>(
    zk: &KafkaZkClient<S>,
    cache: &CredentialCache,
    user: &str,
) -> Result<(), ZkError> {
    let config = match zk.entity_config("users", user).await {
        Ok(config) => config,
        Err(KafkaZkError::Zk(e)) => return Err(e),
        Err(e) => {
            tracing::error!(%user, error = %e, "ignoring an unreadable /config/users entry");
            return Ok(());
        }
    };
    cache.set_user(user, credentials_of(user, &config));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_credential_text_round_trips() {
        let c = ScramCredential::generate(ScramMechanism::Sha256, "alice-secret", b"0123456789".to_vec(), 8192);
        let text = c.to_kafka_string();
        assert!(text.starts_with("salt=MDEyMzQ1Njc4OQ==,stored_key="), "{text}");
        assert!(text.ends_with(",iterations=8192"), "{text}");
        assert_eq!(ScramCredential::parse(&text), Ok(c));
        assert!(ScramCredential::parse("salt=AA==,iterations=4096").is_err());
    }

    #[test]
    fn only_mechanism_keys_of_a_user_config_are_credentials() {
        let c = ScramCredential::generate(ScramMechanism::Sha512, "pw", b"s".to_vec(), 4096);
        let config = BTreeMap::from([
            ("SCRAM-SHA-512".to_string(), c.to_kafka_string()),
            ("producer_byte_rate".to_string(), "1024".to_string()),
            ("SCRAM-SHA-256".to_string(), "garbage".to_string()),
        ]);
        let creds = credentials_of("alice", &config);
        assert_eq!(creds.len(), 1);
        assert_eq!(creds.get(&ScramMechanism::Sha512), Some(&c));
        let cache = CredentialCache::default();
        cache.set_user("alice", creds);
        assert!(cache.get("alice", ScramMechanism::Sha512).is_some());
        assert!(cache.get("alice", ScramMechanism::Sha256).is_none());
        cache.set_user("alice", BTreeMap::new());
        assert_eq!(cache.user_count(), 0);
    }
}
