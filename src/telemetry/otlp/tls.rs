//! TLS for both protocols, as the Go SDK sets it up: the CA certificate file, when one loads,
//! is the whole trust store (else the platform's); a client certificate and key, when they
//! load, are presented to the collector. A file that cannot be read or parsed is a warning and
//! is left out, as Go logs it and goes on (`envconfig.WithCertPool`, `WithClientCert`). One
//! rustls configuration serves HTTP (reqwest) and gRPC (tonic, through [`Connector`]).
//!
//! Takes the configuration's files; gives the TLS configuration to use, `None` for plaintext.
//! Invariant: files are read at startup, bounded (`common::file`), never on the loop's thread
//! afterwards.

use super::Protocol;
use super::config::{ClientFiles, ConfigError, OtlpConfig};
use crate::common::file::read_regular;
use crate::common::limits::MAX_CONFIG_BYTES;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};

/// The TLS configuration `config` asks for (`None`: plaintext), files that do not load
/// reported in `warnings`.
pub fn client_tls(
    config: &OtlpConfig,
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<rustls::ClientConfig>>, ConfigError> {
    let roots = config
        .ca_files
        .iter()
        .filter_map(|(var, path)| load_ca(var, path).map_err(|w| warnings.push(w)).ok())
        .next_back();
    let client = config
        .client_files
        .iter()
        .filter_map(|files| load_client(files).map_err(|w| warnings.push(w)).ok())
        .next_back();
    let from_files = roots.is_some() || client.is_some();
    let tls = match config.protocol {
        Protocol::HttpProtobuf if config.insecure && from_files => {
            return Err(ConfigError(
                "insecure HTTP endpoint cannot use TLS client configuration".into(),
            ));
        }
        Protocol::HttpProtobuf => !config.insecure,
        Protocol::Grpc => from_files || !config.insecure,
    };
    if !tls {
        return Ok(None);
    }
    let alpn: &[u8] = match config.protocol {
        Protocol::HttpProtobuf => b"http/1.1",
        Protocol::Grpc => b"h2",
    };
    build(roots, client, alpn, warnings).map(|c| Some(Arc::new(c)))
}

/// The certificates of a CA file; a warning when it has none.
fn load_ca(var: &str, path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_regular(Path::new(path), MAX_CONFIG_BYTES)
        .map_err(|e| format!("{var}: read tls ca cert file {path:?}: {e}"))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(format!(
            "{var}: create tls cert pool: failed to append certificate to the cert pool"
        ));
    }
    Ok(certs)
}

/// A client certificate chain and its key.
type Client = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn load_client(files: &ClientFiles) -> Result<Client, String> {
    let read = |var: &str, path: &str, what: &str| {
        read_regular(Path::new(path), MAX_CONFIG_BYTES)
            .map_err(|e| format!("{var}: read tls client {what} {path:?}: {e}"))
    };
    let cert = read(files.cert_var, &files.cert, "cert")?;
    let key = read(files.key_var, &files.key, "key")?;
    let pair_error = |e: &dyn std::fmt::Display| {
        format!(
            "{}, {}: create tls client key pair: {e}",
            files.cert_var, files.key_var
        )
    };
    let chain: Vec<_> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| pair_error(&e))?;
    if chain.is_empty() {
        return Err(pair_error(&"no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| pair_error(&e))?;
    Ok((chain, key))
}

/// The rustls configuration: `roots` as the trust store (else the platform's verifier), the
/// client certificate when it goes with its key (else a warning and none).
fn build(
    roots: Option<Vec<CertificateDer<'static>>>,
    client: Option<Client>,
    alpn: &[u8],
    warnings: &mut Vec<String>,
) -> Result<rustls::ClientConfig, ConfigError> {
    use rustls_platform_verifier::BuilderVerifierExt as _;
    let failed = |e: &dyn std::fmt::Display| ConfigError(format!("cannot set up TLS: {e}"));
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| failed(&e))?;
    let builder = match roots {
        Some(certs) => {
            let mut store = rustls::RootCertStore::empty();
            let (_added, _ignored) = store.add_parsable_certificates(certs);
            builder.with_root_certificates(store)
        }
        None => builder.with_platform_verifier().map_err(|e| failed(&e))?,
    };
    let mut config = match client {
        Some((chain, key)) => match builder.clone().with_client_auth_cert(chain, key) {
            Ok(config) => config,
            Err(e) => {
                warnings.push(format!("create tls client key pair: {e}"));
                builder.with_no_client_auth()
            }
        },
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}

/// A stream of either kind.
pub(super) trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// The gRPC channel's connector: TCP, then TLS with the exporter's configuration when it has
/// one (tonic's own TLS would be a second configuration of the same thing).
#[derive(Clone)]
pub(super) struct Connector {
    pub(super) tls: Option<Arc<rustls::ClientConfig>>,
}

type Connected = hyper_util::rt::TokioIo<Box<dyn Io>>;

impl tower_service::Service<http::Uri> for Connector {
    type Response = Connected;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<Connected>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let tls = self.tls.clone();
        Box::pin(async move {
            let invalid = |e: &dyn std::fmt::Display| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
            };
            let host = uri.host().ok_or_else(|| invalid(&"no host"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let port = uri
                .port_u16()
                .unwrap_or(if tls.is_some() { 443 } else { 80 });
            let tcp = tokio::net::TcpStream::connect((host, port)).await?;
            tcp.set_nodelay(true)?;
            let io: Box<dyn Io> = match tls {
                None => Box::new(tcp),
                Some(config) => {
                    let name = ServerName::try_from(host.to_owned()).map_err(|e| invalid(&e))?;
                    let stream = tokio_rustls::TlsConnector::from(config)
                        .connect(name, tcp)
                        .await?;
                    Box::new(stream)
                }
            };
            Ok(hyper_util::rt::TokioIo::new(io))
        })
    }
}
