//! The inter-broker TLS client against a real `TlsServer` on a loopback socket: the broker's
//! certificate must chain to the truststore, and must name the host unless
//! `ssl.endpoint.identification.algorithm` is blank.

use std::collections::HashMap;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use tokio::net::{TcpListener, TcpStream};

use super::{build_client_config, connect};
use crate::security::tls::{TlsServer, TlsSettings};

/// A CA's certificate (PEM) and a broker key and chain it signed for `names`.
fn issue(names: &[&str]) -> (String, String, String) {
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
    let key = KeyPair::generate().expect("key");
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let cert = CertificateParams::new(names)
        .expect("params")
        .signed_by(&key, &ca_cert, &ca_key)
        .expect("sign");
    (
        ca_cert.pem(),
        key.serialize_pem(),
        format!("{}{}", cert.pem(), ca_cert.pem()),
    )
}

fn settings(pairs: &[(&str, &str)]) -> TlsSettings {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    TlsSettings::resolve("INTERNAL", &|key| map.get(key).cloned()).expect("settings")
}

/// Serves one TLS handshake with `key`/`chain` and connects to it as `127.0.0.1`, trusting
/// `ca`; the client's verdict.
async fn handshake(key: &str, chain: &str, ca: &str, algorithm: &str) -> std::io::Result<()> {
    let server = TlsServer::new(settings(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.key", key),
        ("ssl.keystore.certificate.chain", chain),
    ]))
    .expect("server");
    let client = build_client_config(&settings(&[
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.certificates", ca),
        ("ssl.endpoint.identification.algorithm", algorithm),
    ]))
    .expect("client config");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accept = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        let _ = server.accept(stream, Duration::from_secs(5)).await;
    });
    let stream = TcpStream::connect(addr).await.expect("connect");
    let result = connect(&client, "127.0.0.1", stream).await.map(|_| ());
    accept.abort();
    result
}

#[tokio::test]
async fn the_certificate_must_name_the_host_unless_endpoint_identification_is_blank() {
    let (ca, key, chain) = issue(&["broker.example"]);
    let e = handshake(&key, &chain, &ca, "https")
        .await
        .expect_err("127.0.0.1 is not broker.example");
    assert!(e.to_string().contains("not valid for name"), "{e}");
    handshake(&key, &chain, &ca, "")
        .await
        .expect("the chain is trusted and the name is not checked");
    let (ca, key, chain) = issue(&["127.0.0.1"]);
    handshake(&key, &chain, &ca, "https").await.expect("the name matches");
}

#[tokio::test]
async fn an_untrusted_chain_is_refused_even_without_endpoint_identification() {
    let (_, key, chain) = issue(&["127.0.0.1"]);
    let (other_ca, _, _) = issue(&["127.0.0.1"]);
    let e = handshake(&key, &chain, &other_ca, "")
        .await
        .expect_err("signed by a CA the truststore does not hold");
    assert!(e.to_string().contains("invalid peer certificate"), "{e}");
}
