//! Certificates for the OTLP TLS tests, generated per test (rcgen): a CA, the collector's
//! certificate for `localhost` and 127.0.0.1, a client certificate, all signed by the CA and
//! written as PEM files; and the collector side's rustls configuration, which asks for the
//! client certificate and accepts only the CA's.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use std::path::PathBuf;
use std::sync::Arc;

/// The files of one test's certificates, in a directory removed when dropped.
pub struct Certs {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    server_cert: String,
    server_key: String,
    ca_pem: String,
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh CA with a collector and a client certificate, written under a new directory.
pub fn certs() -> Certs {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "sentinel test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
        .expect("CA certificate");
    let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(names).expect("leaf params");
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &ca).expect("leaf certificate");
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(
        vec!["localhost".into(), "127.0.0.1".into()],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (client_cert, client_key) =
        leaf(vec!["sentinel".into()], ExtendedKeyUsagePurpose::ClientAuth);
    let dir = std::env::temp_dir().join(format!(
        "sentinel-otlp-tls-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).expect("certificate directory");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write a certificate file");
        path
    };
    Certs {
        ca: write("ca.pem", &ca.pem()),
        client_cert: write("client.pem", &client_cert),
        client_key: write("client-key.pem", &client_key),
        dir: dir.clone(),
        server_cert,
        server_key,
        ca_pem: ca.pem(),
    }
}

impl Certs {
    /// The collector's TLS: its certificate, and client certificates required and checked
    /// against the CA; ALPN for HTTP/2 (gRPC) and HTTP/1.1.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(cert.expect("CA PEM")).expect("CA added");
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            roots.into(),
            provider.clone(),
        )
        .build()
        .expect("client verifier");
        let chain: Vec<_> = CertificateDer::pem_slice_iter(self.server_cert.as_bytes())
            .collect::<Result<_, _>>()
            .expect("server PEM");
        let key = PrivateKeyDer::from_pem_slice(self.server_key.as_bytes()).expect("server key");
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .expect("server config");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(config)
    }
}
