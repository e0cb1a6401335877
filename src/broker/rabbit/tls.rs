//! The stream to the broker: TCP, and for `amqps://` TLS with the URL's parameters as Go's
//! amqp091 reads them (`ParseURI` and `tlsConfigFromURI`, the version the Go sentinel pins).
//!
//! Takes the URL; gives [`TlsParams`] (read once, when the publisher is made) and [`dial`], which
//! opens the stream. `cacertfile` replaces the system's roots by the file's certificates;
//! `certfile` with `keyfile` is the client certificate (one without the other is ignored, as in
//! Go, with a warning); `server_name_indication` is the name sent and verified instead of the
//! URL's host. The files are read at every connect, as Go reads them at every dial, so a renewed
//! certificate is picked up by the next reconnect.
//!
//! Invariant: an error names the parameter and the file, never its contents (a key's bytes are
//! never printed), and a file is read through [`read_regular`] (never a FIFO, at most 1 MiB).

use crate::common::file::read_regular;
use crate::common::limits::MAX_CONFIG_BYTES;
use lapin::uri::{AMQPScheme, AMQPUri};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A byte stream to the broker: TCP, or TLS over TCP.
pub(super) trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}
/// The stream a connection owns.
pub(super) type Stream = Box<dyn Io>;

/// The TLS query parameters of an AMQP URL (`?cacertfile=…&certfile=…&keyfile=…&
/// server_name_indication=…`), the first of each as Go's `url.Values.Get` takes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsParams {
    /// PEM certificates to trust instead of the system's.
    pub cacertfile: Option<PathBuf>,
    /// The client certificate chain (PEM), used with `keyfile`.
    pub certfile: Option<PathBuf>,
    /// The client certificate's private key (PEM), used with `certfile`.
    pub keyfile: Option<PathBuf>,
    /// The server name to send and verify instead of the URL's host.
    pub server_name: Option<String>,
}

impl TlsParams {
    /// The parameters in `url`'s query (empty ones are absent, as Go's `Get` gives "" for them).
    pub fn from_url(url: &str) -> TlsParams {
        let mut params = TlsParams::default();
        let query = url
            .split_once('?')
            .map_or("", |(_, q)| q.split('#').next().unwrap_or(""));
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (key, value) = (form_decode(key), form_decode(value));
            if value.is_empty() {
                continue;
            }
            let slot = match key.as_str() {
                "cacertfile" => &mut params.cacertfile,
                "certfile" => &mut params.certfile,
                "keyfile" => &mut params.keyfile,
                "server_name_indication" => {
                    params.server_name.get_or_insert(value);
                    continue;
                }
                _ => continue,
            };
            slot.get_or_insert_with(|| PathBuf::from(value));
        }
        params
    }

    /// What an operator should hear about once, at start-up: a `certfile` or `keyfile` alone is
    /// ignored (as in Go: mutual TLS needs both).
    pub fn warning(&self) -> Option<String> {
        match (&self.certfile, &self.keyfile) {
            (Some(_), None) => Some("certfile is set without keyfile".to_owned()),
            (None, Some(_)) => Some("keyfile is set without certfile".to_owned()),
            _ => None,
        }
        .map(|what| format!("{what} in the AMQP URL: no client certificate is sent (as in Go)"))
    }

    /// The rustls configuration these parameters make, the files read now.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("cannot set up TLS: {e}"))?;
        let builder = match &self.cacertfile {
            Some(path) => {
                let mut roots = rustls::RootCertStore::empty();
                for (n, cert) in certificates("cacertfile", path)?.into_iter().enumerate() {
                    roots.add(cert).map_err(|e| {
                        format!(
                            "cacertfile {}: certificate {} is invalid: {e}",
                            path.display(),
                            n + 1
                        )
                    })?;
                }
                builder.with_root_certificates(roots)
            }
            None => {
                use rustls_platform_verifier::BuilderVerifierExt;
                builder
                    .with_platform_verifier()
                    .map_err(|e| format!("cannot load the system's CA certificates: {e}"))?
            }
        };
        let config = match (&self.certfile, &self.keyfile) {
            (Some(certfile), Some(keyfile)) => {
                let chain = certificates("certfile", certfile)?;
                let key = private_key(keyfile)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    format!(
                        "certfile {} and keyfile {} are not a usable client certificate: {e}",
                        certfile.display(),
                        keyfile.display()
                    )
                })?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }
}

/// `application/x-www-form-urlencoded` decoding, as Go's `url.ParseQuery`: `+` is a space.
fn form_decode(s: &str) -> String {
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

fn read(param: &str, path: &std::path::Path) -> Result<String, String> {
    read_regular(path, MAX_CONFIG_BYTES)
        .map_err(|e| format!("cannot read {param} {}: {e}", path.display()))
}

/// The PEM certificates in the file `param` names; none is an error.
fn certificates(
    param: &str,
    path: &std::path::Path,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let text = read(param, path)?;
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(text.as_bytes()).collect();
    match certs {
        Ok(certs) if !certs.is_empty() => Ok(certs),
        // The PEM error's text may quote a line of the file: say only what is wrong.
        _ => Err(format!(
            "{param} {} holds no valid PEM certificate",
            path.display()
        )),
    }
}

/// The PEM private key in `keyfile`. Nothing of the file is quoted in an error.
fn private_key(path: &std::path::Path) -> Result<PrivateKeyDer<'static>, String> {
    let text = read("keyfile", path)?;
    PrivateKeyDer::from_pem_slice(text.as_bytes())
        .map_err(|_| format!("keyfile {} holds no valid PEM private key", path.display()))
}

/// Opens the TCP stream, and for `amqps://` the TLS session with `tls`'s configuration. The
/// caller bounds it.
pub(super) async fn dial(uri: &AMQPUri, tls: &TlsParams) -> Result<Stream, String> {
    let host = uri.authority.host.as_str();
    let port = uri.authority.port;
    // Read before connecting, so that a bad file is the error, not a connection to nowhere.
    let config = match uri.scheme {
        AMQPScheme::AMQP => None,
        AMQPScheme::AMQPS => Some(tls.client_config()?),
    };
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|e| e.to_string())?;
    // A page goes out in one write and then waits for confirms: no reason to let Nagle hold
    // its last segment.
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let Some(config) = config else {
        return Ok(Box::new(tcp));
    };
    let name = tls.server_name.as_deref().unwrap_or(host);
    let server_name = ServerName::try_from(name.to_owned())
        .map_err(|e| format!("invalid TLS server name '{name}': {e}"))?;
    let session = tokio_rustls::TlsConnector::from(config)
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {host}:{port} (as '{name}') failed: {e}"))?;
    Ok(Box::new(session))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_parameters_are_read_as_go_reads_them() {
        let p = TlsParams::from_url(
            "amqps://u:p@h:5671/v?cacertfile=/etc/ca.pem&certfile=%2Fetc%2Fc+d.pem\
             &keyfile=/k.pem&server_name_indication=rabbit.internal&cacertfile=/second&heartbeat=5",
        );
        assert_eq!(p.cacertfile, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(p.certfile, Some(PathBuf::from("/etc/c d.pem")));
        assert_eq!(p.keyfile, Some(PathBuf::from("/k.pem")));
        assert_eq!(p.server_name.as_deref(), Some("rabbit.internal"));
        assert_eq!(p.warning(), None);
        assert_eq!(
            TlsParams::from_url("amqps://h/?cacertfile="),
            TlsParams::default()
        );
        assert_eq!(
            TlsParams::from_url("amqps://h/#cacertfile=x"),
            TlsParams::default()
        );
        let alone = TlsParams::from_url("amqps://h/?certfile=/c.pem");
        assert!(
            alone
                .warning()
                .is_some_and(|w| w.contains("without keyfile"))
        );
    }

    #[test]
    fn file_errors_name_the_file_and_never_its_contents() {
        let dir = std::env::temp_dir().join(format!("sentinel-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let secret = dir.join("key.pem");
        std::fs::write(
            &secret,
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n",
        )
        .expect("write");
        let missing = dir.join("missing.pem");
        let err = |p: TlsParams| p.client_config().err().unwrap_or_default();
        let ca_missing = err(TlsParams {
            cacertfile: Some(missing.clone()),
            ..TlsParams::default()
        });
        assert!(
            ca_missing.starts_with("cannot read cacertfile "),
            "{ca_missing}"
        );
        assert!(ca_missing.contains("missing.pem"), "{ca_missing}");
        let ca_not_pem = err(TlsParams {
            cacertfile: Some(secret.clone()),
            ..TlsParams::default()
        });
        assert!(
            ca_not_pem.contains("holds no valid PEM certificate"),
            "{ca_not_pem}"
        );
        let key_bad = err(TlsParams {
            certfile: Some(secret.clone()),
            keyfile: Some(secret.clone()),
            ..TlsParams::default()
        });
        assert!(key_bad.contains("key.pem"), "{key_bad}");
        for e in [&ca_not_pem, &key_bad] {
            assert!(!e.contains("c2VjcmV0") && !e.contains("secret-key"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
