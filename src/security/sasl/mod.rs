//! SASL on SASL_PLAINTEXT (and, with TLS underneath, SASL_SSL) listeners: the PLAIN and SCRAM
//! servers ([`plain`], [`scram`]), the SCRAM credentials Kafka keeps in `/config/users/<u>` and
//! the per-broker cache of them ([`credentials`]), which mechanisms each listener serves
//! ([`config`]), and the client side inter-broker connections use ([`client`]). The exchange
//! on the wire (SaslHandshake, SaslAuthenticate) is `network::authentication`'s.

pub mod client;
pub mod config;
pub mod credentials;
pub mod plain;
pub mod scram;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// The SCRAM mechanisms Kafka serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The mechanism's SASL name, also its key in `/config/users/<u>`.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The Kafka protocol's `ScramMechanism` enum (DescribeUserScramCredentials).
    pub fn wire_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_wire_type(t: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.wire_type() == t)
    }

    /// Kafka's minimum iterations for the mechanism (`ScramMechanism.minIterations`).
    pub fn min_iterations(self) -> i32 {
        4096
    }

    /// Kafka's maximum iterations (`ScramMechanism.maxIterations`).
    pub fn max_iterations(self) -> i32 {
        16_384
    }

    pub(crate) fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("HMAC accepts keys of any length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    /// RFC 5802's `Hi(password, salt, i)`: PBKDF2 with HMAC of the mechanism's hash.
    pub(crate) fn salted_password(self, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut out = vec![0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, iterations, &mut out);
                out
            }
            ScramMechanism::Sha512 => {
                let mut out = vec![0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password.as_bytes(), salt, iterations, &mut out);
                out
            }
        }
    }
}

impl std::fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A mechanism a SASL listener may serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SaslMechanism {
    Plain,
    Scram(ScramMechanism),
}

impl SaslMechanism {
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(m) => m.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "PLAIN" => Some(SaslMechanism::Plain),
            other => ScramMechanism::from_name(other).map(SaslMechanism::Scram),
        }
    }
}

impl std::fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
