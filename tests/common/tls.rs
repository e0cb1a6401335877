//! TLS for the tests: a CA, a server and a client certificate made in the test (rcgen), written
//! as PEM files, and a TLS terminator that forwards what it decrypts to a plain server (the
//! shared RabbitMQ, an OTLP receiver). Shared by the amqps and OTLP-over-TLS tests.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};

/// The PEM files of a test PKI, in a directory removed on drop.
pub struct Pki {
    pub dir: PathBuf,
    /// The CA that signed the server and client certificates.
    pub ca: PathBuf,
    /// A CA that signed nothing here (a wrong `cacertfile`).
    pub other_ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ca(name: &str) -> (Issuer<'static, KeyPair>, String) {
    let key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("CA certificate");
    (Issuer::new(params, key), cert.pem())
}

fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("params");
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).expect("signed");
    (cert.pem(), key.serialize_pem())
}

/// A CA, a server certificate for `server_names` (DNS names or IP addresses) and a client
/// certificate, written under a fresh directory.
pub fn pki(server_names: &[&str]) -> Pki {
    let dir = std::env::temp_dir().join(format!("sentinel-pki-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).expect("pki dir");
    let (issuer, ca_pem) = ca("sentinel test CA");
    let (_, other_pem) = ca("another CA");
    let (server_cert, server_key) =
        leaf(&issuer, server_names, ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) =
        leaf(&issuer, &["sentinel"], ExtendedKeyUsagePurpose::ClientAuth);
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write pem");
        path
    };
    Pki {
        ca: write("ca.pem", &ca_pem),
        other_ca: write("other-ca.pem", &other_pem),
        server_cert: write("server.pem", &server_cert),
        server_key: write("server-key.pem", &server_key),
        client_cert: write("client.pem", &client_cert),
        client_key: write("client-key.pem", &client_key),
        dir,
    }
}

/// A TLS server on 127.0.0.1:0 that forwards each connection's plaintext to `upstream`,
/// recording the server name each client asked for (SNI).
pub struct Terminator {
    pub addr: SocketAddr,
    pub names: Arc<Mutex<Vec<Option<String>>>>,
}

impl Pki {
    /// A server's TLS with the PKI's server certificate; with `client_auth` it requires a
    /// client certificate signed by the PKI's CA. ALPN offers HTTP/2 (gRPC) and HTTP/1.1.
    pub fn server_config(&self, client_auth: bool) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&self.server_cert)
            .expect("server cert")
            .collect::<Result<_, _>>()
            .expect("server cert pem");
        let key = PrivateKeyDer::from_pem_file(&self.server_key).expect("server key");
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("versions");
        let builder = if client_auth {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(&self.ca).expect("ca") {
                roots.add(cert.expect("ca pem")).expect("ca added");
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder.with_single_cert(chain, key).expect("server config");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// Starts a terminator with the PKI's server certificate; with `client_auth` it requires a
/// client certificate signed by the PKI's CA.
pub async fn terminator(pki: &Pki, upstream: &str, client_auth: bool) -> Terminator {
    let mut config = Arc::unwrap_or_clone(pki.server_config(client_auth));
    // The terminator forwards bytes: no ALPN, whatever the upstream speaks.
    config.alpn_protocols.clear();
    let config = config;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let names = Arc::new(Mutex::new(Vec::new()));
    let seen = names.clone();
    let upstream = upstream.to_owned();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let (acceptor, seen, upstream) = (acceptor.clone(), seen.clone(), upstream.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(sock).await else {
                    return;
                };
                let name = tls.get_ref().1.server_name().map(str::to_owned);
                seen.lock().expect("names").push(name);
                if let Ok(mut up) = TcpStream::connect(&upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                }
            });
        }
    });
    Terminator { addr, names }
}
