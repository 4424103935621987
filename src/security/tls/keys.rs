//! Loading keystores and truststores as Kafka's `DefaultSslEngineFactory` reads them: PEM files,
//! PEM given inline (`ssl.keystore.key` + `ssl.keystore.certificate.chain`,
//! `ssl.truststore.certificates`) and PKCS12 files. JKS is refused with the `keytool` command
//! that converts it (no maintained Rust crate reads JKS). Reads files; builds no TLS state.

use std::path::Path;

use p12_keystore::{KeyStore, KeyStoreEntry};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::settings::{StoreSpec, StoreType, TlsConfigError};

/// A private key and the certificate chain it signs for, leaf first.
#[derive(Debug)]
pub struct KeyMaterial {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl Clone for KeyMaterial {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

/// The `keytool` command that turns a JKS store into the PKCS12 one kastle reads.
pub fn jks_conversion_hint(location: &str) -> String {
    format!(
        "kastle cannot read JKS stores; convert it with `keytool -importkeystore -srckeystore {location} \
         -srcstoretype JKS -destkeystore {location}.p12 -deststoretype PKCS12`, then set the store type \
         to PKCS12 and the location to {location}.p12"
    )
}

/// Loads the keystore `spec` describes (`spec.prefix` names its keys in errors).
pub fn load_keystore(spec: &StoreSpec) -> Result<KeyMaterial, TlsConfigError> {
    let err = |suffix: &str, problem: String| TlsConfigError::new(spec.key(suffix), problem);
    if let Some(inline_key) = &spec.inline_key {
        if spec.store_type != StoreType::Pem {
            return Err(err(
                "type",
                format!("PEM when {} is set (it is {})", spec.key("key"), spec.store_type),
            ));
        }
        let Some(chain_pem) = &spec.inline_chain else {
            return Err(err(
                "certificate.chain",
                format!("the certificate chain (PEM) for the key in {}", spec.key("key")),
            ));
        };
        let key = pem_key(inline_key.as_bytes(), spec.key_password.is_some()).map_err(|problem| err("key", problem))?;
        let chain = pem_certs(chain_pem.as_bytes()).map_err(|problem| err("certificate.chain", problem))?;
        return Ok(KeyMaterial { chain, key });
    }
    let Some(location) = &spec.location else {
        return Err(err(
            "location",
            format!(
                "a keystore: set {} (or {} with {})",
                spec.key("location"),
                spec.key("key"),
                spec.key("certificate.chain")
            ),
        ));
    };
    let bytes = read_store(spec, location)?;
    match spec.store_type {
        StoreType::Jks => Err(err("type", jks_conversion_hint(location))),
        StoreType::Pem => {
            if spec.password.is_some() {
                return Err(err(
                    "password",
                    "no keystore password with a PEM keystore (only ssl.key.password may be given, for the key)"
                        .to_string(),
                ));
            }
            let key = pem_key(&bytes, spec.key_password.is_some())
                .map_err(|p| err("location", format!("{location}: {p}")))?;
            let chain = pem_certs(&bytes).map_err(|p| err("location", format!("{location}: {p}")))?;
            Ok(KeyMaterial { chain, key })
        }
        StoreType::Pkcs12 => {
            let password = spec.password.as_deref().unwrap_or("");
            if let Some(key_password) = &spec.key_password {
                if key_password != password {
                    return Err(err(
                        "key.password",
                        "the keystore password: kastle reads PKCS12 keys protected by the store password only"
                            .to_string(),
                    ));
                }
            }
            let store = KeyStore::from_pkcs12(&bytes, password).map_err(|e| {
                err(
                    "location",
                    format!(
                        "{location}: not a PKCS12 keystore readable with {}: {e}",
                        spec.key("password")
                    ),
                )
            })?;
            let Some((_, entry)) = store.private_key_chain() else {
                return Err(err(
                    "location",
                    format!("{location}: the PKCS12 store holds no private key"),
                ));
            };
            let chain = entry
                .chain()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect::<Vec<_>>();
            if chain.is_empty() {
                return Err(err(
                    "location",
                    format!("{location}: the private key has no certificate"),
                ));
            }
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(entry.key().to_vec()));
            Ok(KeyMaterial { chain, key })
        }
    }
}

/// Loads the trusted certificates `spec` describes; `None` when no truststore is configured.
pub fn load_truststore(spec: &StoreSpec) -> Result<Option<Vec<CertificateDer<'static>>>, TlsConfigError> {
    let err = |suffix: &str, problem: String| TlsConfigError::new(spec.key(suffix), problem);
    if let Some(inline) = &spec.inline_chain {
        if spec.store_type != StoreType::Pem {
            return Err(err(
                "type",
                format!(
                    "PEM when {} is set (it is {})",
                    spec.key("certificates"),
                    spec.store_type
                ),
            ));
        }
        return pem_certs(inline.as_bytes())
            .map(Some)
            .map_err(|p| err("certificates", p));
    }
    let Some(location) = &spec.location else {
        return Ok(None);
    };
    let bytes = read_store(spec, location)?;
    match spec.store_type {
        StoreType::Jks => Err(err("type", jks_conversion_hint(location))),
        StoreType::Pem => pem_certs(&bytes)
            .map(Some)
            .map_err(|p| err("location", format!("{location}: {p}"))),
        StoreType::Pkcs12 => {
            let password = spec.password.as_deref().unwrap_or("");
            let store = KeyStore::from_pkcs12(&bytes, password).map_err(|e| {
                err(
                    "location",
                    format!(
                        "{location}: not a PKCS12 truststore readable with {}: {e}",
                        spec.key("password")
                    ),
                )
            })?;
            let certs: Vec<CertificateDer<'static>> = store
                .entries()
                .flat_map(|(_, entry)| match entry {
                    KeyStoreEntry::Certificate(c) => vec![CertificateDer::from(c.as_der().to_vec())],
                    KeyStoreEntry::PrivateKeyChain(chain) => chain
                        .chain()
                        .iter()
                        .map(|c| CertificateDer::from(c.as_der().to_vec()))
                        .collect(),
                })
                .collect();
            if certs.is_empty() {
                return Err(err(
                    "location",
                    format!("{location}: the PKCS12 store holds no certificate"),
                ));
            }
            Ok(Some(certs))
        }
    }
}

fn read_store(spec: &StoreSpec, location: &str) -> Result<Vec<u8>, TlsConfigError> {
    let bytes = std::fs::read(Path::new(location))
        .map_err(|e| TlsConfigError::new(spec.key("location"), format!("cannot read {location}: {e}")))?;
    // 0xFEEDFEED is the JKS magic: say how to convert rather than fail to parse.
    if bytes.starts_with(&[0xfe, 0xed, 0xfe, 0xed]) {
        return Err(TlsConfigError::new(spec.key("type"), jks_conversion_hint(location)));
    }
    Ok(bytes)
}

/// The first private key in `pem` (PKCS#8, PKCS#1 RSA or SEC1 EC).
fn pem_key(pem: &[u8], has_password: bool) -> Result<PrivateKeyDer<'static>, String> {
    if contains(pem, b"ENCRYPTED PRIVATE KEY") {
        return Err(
            "an encrypted PKCS#8 key, which kastle cannot decrypt yet; decrypt it with \
                    `openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-plain.pem` and drop ssl.key.password"
                .to_string(),
        );
    }
    let key = PrivateKeyDer::from_pem_slice(pem).map_err(|e| format!("no PEM private key ({e})"))?;
    if has_password {
        return Err("an unencrypted key, so ssl.key.password must not be set".to_string());
    }
    Ok(key)
}

/// Every certificate in `pem`, in order; at least one.
pub(crate) fn pem_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("bad PEM certificate ({e})"))?;
    if certs.is_empty() {
        return Err("no PEM certificate (-----BEGIN CERTIFICATE-----)".to_string());
    }
    Ok(certs)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
