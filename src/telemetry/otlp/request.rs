//! An encoded `ExportTraceServiceRequest` and the buffer it was built in.
//!
//! Invariant: the message is never copied between the page's buffer and the transport.

/// An encoded `ExportTraceServiceRequest`, after the unused part of its buffer.
#[derive(Debug)]
pub struct Request {
    buf: Vec<u8>,
    /// Where the message starts in `buf`.
    at: usize,
}

impl Request {
    /// The message that starts at `at` in `buf`.
    pub(crate) fn at(buf: Vec<u8>, at: usize) -> Request {
        Request { buf, at }
    }

    /// A message that is all of `buf`.
    pub fn whole(buf: Vec<u8>) -> Request {
        Request { buf, at: 0 }
    }

    /// The message.
    pub fn message(&self) -> &[u8] {
        &self.buf[self.at..]
    }

    /// Appends the resource spans of `other` (protobuf merges repeated fields: the two
    /// requests end to end are one request with the spans of both).
    pub fn append(&mut self, other: &Request) {
        self.buf.extend_from_slice(other.message());
    }

    /// The message as shared bytes, without a copy.
    pub fn into_bytes(self) -> prost::bytes::Bytes {
        prost::bytes::Bytes::from(self.buf).slice(self.at..)
    }
}
