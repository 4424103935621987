//! A test PKI made with rcgen in a temp dir: a CA, certificates for 127.0.0.1/localhost signed
//! by it (PEM files and PKCS12 stores made with the openssl CLI), for the TLS tests of
//! listeners and of ZooKeeper connections.

use std::path::PathBuf;
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose};

/// A test PKI in a temp dir: `ca.pem`, `broker.pem` (key + chain, a PEM keystore),
/// `broker.crt`/`broker.key`, `client.crt`/`client.key`, and `peer.pem` (usable as server and as
/// client certificate: a broker on a mutual-TLS inter-broker listener).
pub struct Pki {
    pub dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        let dir = tempfile::Builder::new()
            .prefix("kastle-pki-")
            .tempdir()
            .expect("tempdir");
        let ca_key = KeyPair::generate().expect("ca key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "kastle test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
        std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).expect("write ca");
        let pki = Pki { dir };
        pki.issue(
            "broker",
            "kastle broker",
            &ca_cert,
            &ca_key,
            &[ExtendedKeyUsagePurpose::ServerAuth],
        );
        pki.issue(
            "broker2",
            "kastle broker two",
            &ca_cert,
            &ca_key,
            &[ExtendedKeyUsagePurpose::ServerAuth],
        );
        pki.issue(
            "client",
            "alice",
            &ca_cert,
            &ca_key,
            &[ExtendedKeyUsagePurpose::ClientAuth],
        );
        pki.issue(
            "peer",
            "kastle broker",
            &ca_cert,
            &ca_key,
            &[ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
        );
        pki
    }

    /// `<name>.crt`, `<name>.key` and `<name>.pem` (key then chain) signed by the CA, subject
    /// `CN=<cn>,OU=eng,O=acme`, for 127.0.0.1 and localhost.
    pub fn issue(
        &self,
        name: &str,
        cn: &str,
        ca: &rcgen::Certificate,
        ca_key: &KeyPair,
        usages: &[ExtendedKeyUsagePurpose],
    ) {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).expect("params");
        // ASN.1 order O, OU, CN: written most specific first, CN=...,OU=eng,O=acme.
        params.distinguished_name.push(DnType::OrganizationName, "acme");
        params.distinguished_name.push(DnType::OrganizationalUnitName, "eng");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = usages.to_vec();
        let cert = params.signed_by(&key, ca, ca_key).expect("sign");
        std::fs::write(self.path(&format!("{name}.crt")), cert.pem()).expect("write crt");
        std::fs::write(self.path(&format!("{name}.key")), key.serialize_pem()).expect("write key");
        std::fs::write(
            self.path(&format!("{name}.pem")),
            format!("{}{}{}", key.serialize_pem(), cert.pem(), ca.pem()),
        )
        .expect("write pem");
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    pub fn p(&self, file: &str) -> String {
        self.path(file).display().to_string()
    }

    /// `<name>.p12`, password `secret`, made with the openssl CLI.
    pub fn pkcs12(&self, name: &str) -> String {
        let out = Command::new("openssl")
            .args(["pkcs12", "-export", "-in"])
            .arg(self.path(&format!("{name}.crt")))
            .arg("-inkey")
            .arg(self.path(&format!("{name}.key")))
            .arg("-certfile")
            .arg(self.path("ca.pem"))
            .arg("-out")
            .arg(self.path(&format!("{name}.p12")))
            .args(["-passout", "pass:secret", "-name", name])
            .output()
            .expect("openssl pkcs12");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        self.p(&format!("{name}.p12"))
    }
}
