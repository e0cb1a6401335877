//! TSL text → [`Tsl`], accepting what the HyperFleet API accepts.

use super::Tsl;

/// The longest search the API accepts, in bytes.
pub const MAX_SEARCH_LEN: usize = 4096;

/// Why a search was refused: the API's 400 reason.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct TslError {
    /// The byte offset in the search where it went wrong, when there is one.
    pub offset: Option<usize>,
    /// What the API says.
    pub reason: String,
}

/// Parses and validates a search as the API does. A blank search is [`Tsl::True`].
pub fn parse(text: &str) -> Result<Tsl, TslError> {
    let _ = text;
    Err(TslError {
        offset: None,
        reason: "TSL parsing is not implemented yet".into(),
    })
}
