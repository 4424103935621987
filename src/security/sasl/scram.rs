//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's `ScramSaslServer` serves
//! them: a pure state machine from the client-first message to the server-final one. It does
//! no I/O and no lookups of its own: the caller passes the user's credential in when the
//! client-first message names the user, and the server nonce (so tests can fix it).
//!
//! Kafka's choices kept here: only the `n` (no channel binding) and `y` GS2 flags; an
//! authorization id, if given, must equal the user; SCRAM extensions such as `tokenauth`
//! (delegation tokens) are refused; a wrong proof and an unknown user get the same message.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::credentials::ScramCredential;
use super::ScramMechanism;

/// Why a SCRAM exchange failed; the text is what the client sees in `error_message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("Authentication failed: Invalid user credentials")]
    InvalidCredentials,
    #[error("Invalid SCRAM client first message: {0}")]
    BadClientFirst(String),
    #[error("Invalid SCRAM client final message: {0}")]
    BadClientFinal(String),
    #[error("Unsupported SCRAM extensions: {0}")]
    UnsupportedExtensions(String),
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthorizationIdMismatch,
}

/// The server after it sent server-first, waiting for client-final.
#[derive(Debug, Clone)]
pub struct ScramServerFirst {
    mechanism: ScramMechanism,
    user: String,
    credential: ScramCredential,
    gs2_header: String,
    nonce: String,
    auth_message_prefix: String,
}

/// What the client-first message says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    pub gs2_header: String,
    pub user: String,
    pub client_nonce: String,
    pub bare: String,
    pub extensions: Vec<(String, String)>,
}

/// Decodes a `saslname` (RFC 5802 §5.1): `=2C` is `,` and `=3D` is `=`; any other `=` is invalid.
pub fn decode_saslname(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3)?;
        out.push(match code {
            "2C" | "2c" => ',',
            "3D" | "3d" => '=',
            _ => return None,
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// Encodes a user name as a `saslname` (the inverse of [`decode_saslname`]).
pub fn encode_saslname(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// Parses `gs2-header client-first-bare`.
pub fn parse_client_first(message: &str) -> Result<ClientFirst, ScramError> {
    let bad = |why: &str| ScramError::BadClientFirst(why.to_string());
    let (flag, rest) = message.split_once(',').ok_or_else(|| bad("no GS2 header"))?;
    match flag {
        "n" | "y" => {}
        f if f.starts_with("p=") => return Err(bad("channel binding is not supported")),
        _ => return Err(bad("invalid GS2 channel-binding flag")),
    }
    let (authzid, bare) = rest.split_once(',').ok_or_else(|| bad("no GS2 header"))?;
    let authzid = match authzid {
        "" => None,
        a => Some(
            a.strip_prefix("a=")
                .and_then(decode_saslname)
                .ok_or_else(|| bad("invalid authorization id"))?,
        ),
    };
    let gs2_header = format!(
        "{flag},{authzid_raw},",
        authzid_raw = &rest[..rest.len() - bare.len() - 1]
    );
    let mut attrs = bare.split(',');
    let user = attrs
        .next()
        .and_then(|a| a.strip_prefix("n="))
        .ok_or_else(|| bad("expected n=<saslname>"))?;
    let user = decode_saslname(user).ok_or_else(|| bad("invalid saslname"))?;
    let client_nonce = attrs
        .next()
        .and_then(|a| a.strip_prefix("r="))
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bad("expected r=<nonce>"))?
        .to_string();
    let mut extensions = Vec::new();
    for attr in attrs {
        let (k, v) = attr.split_once('=').ok_or_else(|| bad("invalid extension"))?;
        extensions.push((k.to_string(), v.to_string()));
    }
    if authzid.as_ref().is_some_and(|a| *a != user) {
        return Err(ScramError::AuthorizationIdMismatch);
    }
    Ok(ClientFirst {
        gs2_header,
        user,
        client_nonce,
        bare: bare.to_string(),
        extensions,
    })
}

impl ScramServerFirst {
    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// Answers a client-first message. `credential` is the stored credential of the user it
    /// names (`None`: unknown user); `server_nonce` is printable and comma-free.
    pub fn start(
        mechanism: ScramMechanism,
        client_first: &ClientFirst,
        credential: Option<ScramCredential>,
        server_nonce: &str,
    ) -> Result<(Self, String), ScramError> {
        if !client_first.extensions.is_empty() {
            let names: Vec<&str> = client_first.extensions.iter().map(|(k, _)| k.as_str()).collect();
            return Err(ScramError::UnsupportedExtensions(names.join(",")));
        }
        let credential = credential.ok_or(ScramError::InvalidCredentials)?;
        let nonce = format!("{}{server_nonce}", client_first.client_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let state = Self {
            mechanism,
            user: client_first.user.clone(),
            credential,
            gs2_header: client_first.gs2_header.clone(),
            nonce,
            auth_message_prefix: format!("{},{server_first}", client_first.bare),
        };
        Ok((state, server_first))
    }

    /// Checks client-final (`c=…,r=…[,ext],p=…`); returns the user and server-final `v=…`.
    pub fn finish(self, client_final: &str) -> Result<(String, String), ScramError> {
        let bad = |why: &str| ScramError::BadClientFinal(why.to_string());
        let (without_proof, proof) = client_final.rsplit_once(",p=").ok_or_else(|| bad("no proof"))?;
        let mut attrs = without_proof.split(',');
        let binding = attrs
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or_else(|| bad("expected c=<channel binding>"))?;
        if B64.decode(binding).ok().as_deref() != Some(self.gs2_header.as_bytes()) {
            return Err(bad("channel binding does not match the GS2 header"));
        }
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or_else(|| bad("expected r=<nonce>"))?;
        // Kafka's ScramSaslServer accepts a client-final nonce that *ends with* the combined
        // nonce, and clients rely on it: librdkafka 2.0 sends its own nonce followed by the whole
        // server-first `r=` value. The random server part is still required, so a replayed
        // exchange still fails.
        if !nonce.ends_with(&self.nonce) {
            return Err(bad("nonce mismatch"));
        }
        let proof = B64.decode(proof).map_err(|_| bad("proof is not base64"))?;
        let auth_message = format!("{},{without_proof}", self.auth_message_prefix);
        let m = self.mechanism;
        let client_signature = m.hmac(&self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(ScramError::InvalidCredentials);
        }
        let client_key: Vec<u8> = proof.iter().zip(&client_signature).map(|(a, b)| a ^ b).collect();
        if !constant_time_eq(&m.hash(&client_key), &self.credential.stored_key) {
            return Err(ScramError::InvalidCredentials);
        }
        let server_signature = m.hmac(&self.credential.server_key, auth_message.as_bytes());
        Ok((self.user, format!("v={}", B64.encode(server_signature))))
    }
}

/// Compares without an early exit, so timing does not tell how much of a key matched.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh server nonce: 32 alphanumeric characters (printable, comma-free).
pub fn server_nonce() -> String {
    use rand::distr::{Alphanumeric, SampleString};
    Alphanumeric.sample_string(&mut rand::rng(), 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 §3: user `user`, password `pencil`, 4096 iterations.
    const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
    const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const SERVER_FIRST: &str = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str =
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn rfc_credential() -> ScramCredential {
        let salt = B64.decode(SALT).expect("salt");
        ScramCredential::generate(ScramMechanism::Sha256, "pencil", salt, 4096)
    }

    #[test]
    fn rfc_7677_test_vector() {
        let first = parse_client_first(CLIENT_FIRST).expect("client first");
        assert_eq!(first.user, "user");
        let (server, server_first) =
            ScramServerFirst::start(ScramMechanism::Sha256, &first, Some(rfc_credential()), SERVER_NONCE)
                .expect("server first");
        assert_eq!(server_first, SERVER_FIRST);
        let (user, server_final) = server.finish(CLIENT_FINAL).expect("authenticated");
        assert_eq!(user, "user");
        assert_eq!(server_final, SERVER_FINAL);
    }

    #[test]
    fn a_wrong_proof_an_unknown_user_and_a_changed_nonce_fail() {
        let first = parse_client_first(CLIENT_FIRST).expect("client first");
        let wrong = ScramCredential::generate(ScramMechanism::Sha256, "pencils", rfc_credential().salt, 4096);
        let (server, _) =
            ScramServerFirst::start(ScramMechanism::Sha256, &first, Some(wrong), SERVER_NONCE).expect("first");
        assert_eq!(server.finish(CLIENT_FINAL), Err(ScramError::InvalidCredentials));
        assert_eq!(
            ScramServerFirst::start(ScramMechanism::Sha256, &first, None, SERVER_NONCE).map(|_| ()),
            Err(ScramError::InvalidCredentials)
        );
        let (server, _) =
            ScramServerFirst::start(ScramMechanism::Sha256, &first, Some(rfc_credential()), "other").expect("first");
        assert!(matches!(
            server.finish(CLIENT_FINAL),
            Err(ScramError::BadClientFinal(_))
        ));
    }

    #[test]
    fn extensions_such_as_tokenauth_are_refused() {
        let first = parse_client_first("n,,n=user,r=abc,tokenauth=true").expect("parses");
        assert!(matches!(
            ScramServerFirst::start(ScramMechanism::Sha256, &first, Some(rfc_credential()), "x"),
            Err(ScramError::UnsupportedExtensions(e)) if e == "tokenauth"
        ));
    }

    #[test]
    fn saslnames_are_unescaped_and_authzid_must_match() {
        let first = parse_client_first("n,a=a=3Db=2Cc,n=a=3Db=2Cc,r=xyz").expect("parses");
        assert_eq!(first.user, "a=b,c");
        assert_eq!(first.gs2_header, "n,a=a=3Db=2Cc,");
        assert_eq!(encode_saslname("a=b,c"), "a=3Db=2Cc");
        assert_eq!(decode_saslname("bad=41"), None);
        assert_eq!(
            parse_client_first("n,a=bob,n=alice,r=x"),
            Err(ScramError::AuthorizationIdMismatch)
        );
        assert!(parse_client_first("p=tls-unique,,n=alice,r=x").is_err());
    }

    #[test]
    fn sha512_round_trips_with_the_client() {
        use super::super::client::ScramClient;
        let cred = ScramCredential::generate(ScramMechanism::Sha512, "secret", b"salty".to_vec(), 4096);
        let client = ScramClient::new(ScramMechanism::Sha512, "al,ice=", "secret");
        let first = parse_client_first(client.client_first()).expect("first");
        assert_eq!(first.user, "al,ice=");
        let (server, server_first) =
            ScramServerFirst::start(ScramMechanism::Sha512, &first, Some(cred), &server_nonce()).expect("first");
        let (client, client_final) = client.client_final(&server_first).expect("client final");
        let (_, server_final) = server.finish(&client_final).expect("authenticated");
        client.verify_server_final(&server_final).expect("server verified");
    }

    #[test]
    fn librdkafkas_client_final_with_its_nonce_prefixed_is_accepted_as_kafka_accepts_it() {
        // librdkafka 2.0 sends `r=<client nonce><server-first r=>` and signs exactly that.
        let m = ScramMechanism::Sha256;
        let cred = ScramCredential::generate(m, "scram-secret", b"salt".to_vec(), 4096);
        let client_first = "n,,n=scrammer,r=pXPj7a@U:W<Ui?kX4rV3=fa";
        let first = parse_client_first(client_first).expect("first");
        let (server, server_first) = ScramServerFirst::start(m, &first, Some(cred), "SKwGpedcd0").expect("first");
        let combined = server_first
            .split(',')
            .next()
            .and_then(|r| r.strip_prefix("r="))
            .expect("nonce");
        let without_proof = format!("c=biws,r=pXPj7a@U:W<Ui?kX4rV3=fa{combined}");
        let salted = m.salted_password("scram-secret", b"salt", 4096);
        let client_key = m.hmac(&salted, b"Client Key");
        let auth_message = format!("{},{server_first},{without_proof}", &client_first[3..]);
        let signature = m.hmac(&m.hash(&client_key), auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let (user, _) = server
            .finish(&format!("{without_proof},p={}", B64.encode(proof)))
            .expect("accepted, as Kafka's endsWith check accepts it");
        assert_eq!(user, "scrammer");
    }
}
