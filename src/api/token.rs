//! The bearer token: read from a file (a projected service-account token, rotated on disk), either
//! on every request or cached for a TTL.
//!
//! Invariant: a token is never empty, never read from anything but a regular file of at most
//! [`MAX_TOKEN_BYTES`]; a missing or blank file is a [`TokenError`], so no request
//! goes out without the credentials the operator configured.

use super::error::TokenError;
use crate::common::file::read_regular;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest token file read: the config file's limit, 1 MiB (a service-account token is
/// about 1 KiB).
pub const MAX_TOKEN_BYTES: usize = crate::common::limits::MAX_CONFIG_BYTES;

/// Reads the token file, caching its content for `ttl` (zero: re-read on every request).
#[derive(Debug)]
pub(crate) struct TokenSource {
    path: PathBuf,
    ttl: Duration,
    cached: Mutex<Option<(Arc<str>, Instant)>>,
}

impl TokenSource {
    pub(crate) fn new(path: PathBuf, ttl: Duration) -> TokenSource {
        TokenSource {
            path,
            ttl,
            cached: Mutex::new(None),
        }
    }

    /// The current token: from the cache while it is younger than the TTL, else from the file.
    pub(crate) fn get(&self) -> Result<Arc<str>, TokenError> {
        if self.ttl.is_zero() {
            return self.read();
        }
        // A poisoned lock only means another thread panicked mid-update; the cache is still a
        // valid (token, time) pair or None, so keep using it.
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((token, read_at)) = cached.as_ref()
            && read_at.elapsed() < self.ttl
        {
            return Ok(token.clone());
        }
        let token = self.read()?;
        *cached = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    /// Reads the file: a regular file of at most [`MAX_TOKEN_BYTES`], opened without waiting
    /// ([`read_regular`]: a FIFO or device put in its place is an error, not a read that holds
    /// the async worker). The read is blocking, which is fine for a small regular file: it
    /// costs less than handing it to a blocking thread would.
    fn read(&self) -> Result<Arc<str>, TokenError> {
        let path = self.path.display().to_string();
        let raw = read_regular(&self.path, MAX_TOKEN_BYTES).map_err(|source| TokenError::Read {
            path: path.clone(),
            source,
        })?;
        let token = raw.trim();
        if token.is_empty() {
            return Err(TokenError::Empty { path });
        }
        Ok(Arc::from(token))
    }
}
