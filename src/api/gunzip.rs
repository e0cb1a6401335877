//! A gzipped response body inflated as Go's `compress/gzip` reader reads it (the reader Go's
//! HTTP transport puts under a gzipped response), within a bound on the inflated bytes.
//!
//! Takes the whole body as it came over the wire; gives its inflated bytes, or the error Go's
//! reader would have stopped at, with Go's text ([`GzipError`]), or [`GunzipError::TooLarge`].
//!
//! As Go's reader: the body is a series of members, each inflated and checked (CRC-32 and size)
//! in turn, to the end of the body: a proxy that concatenates members is read whole. After a
//! member, the end of the body ends it; fewer than 10 more bytes are `unexpected EOF`, and 10
//! or more that do not begin a member are `gzip: invalid header`, so trailing garbage is
//! refused. Headers are read by Go's rules, not zlib's (reserved flag bits are ignored, a name
//! or comment of 512 bytes or more is an invalid header, the header CRC covers the 10 fixed
//! bytes, a header cut inside its name or comment ends the body), and an empty body is an empty
//! body.
//!
//! Tactics: the members' deflate data is inflated by zlib-rs (through flate2) straight into the
//! vector that becomes the page's text, never zero-filled first: its capacity is the size the
//! last member's trailer announces (the whole body's, for the single member a server sends), so
//! a page is neither copied by a regrowth nor over-allocated; a body that inflates past it
//! grows it by doubling, never past `limit + 1` bytes. The inflater (zlib-rs's state and its
//! 32 KiB window, ~40 KiB allocated and set up when made) is the thread's, reset per member,
//! not made per page.
//!
//! Invariant: at most `limit + 1` inflated bytes are ever held; past `limit` the answer is
//! [`GunzipError::TooLarge`], however many members the bytes are spread over.

use flate2::{Crc, Decompress, FlushDecompress, Status};

/// Why a gzipped body was not read: the errors of Go's `compress/gzip` and `compress/flate`
/// readers, with their texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GzipError {
    /// A member does not begin with the gzip magic and method, or its header is bad
    /// (`gzip.ErrHeader`).
    #[error("gzip: invalid header")]
    Header,
    /// The body ends inside a header, the deflate data or the trailer (`io.ErrUnexpectedEOF`).
    #[error("unexpected EOF")]
    UnexpectedEof,
    /// A member's CRC-32 or size is not its trailer's (`gzip.ErrChecksum`).
    #[error("gzip: invalid checksum")]
    Checksum,
    /// The deflate data is invalid (`flate.CorruptInputError`). The offset counts the member's
    /// deflate bytes read when the error was found; Go's reader, which reads a byte at a time,
    /// may count a byte or two more.
    #[error("flate: corrupt input before offset {offset}")]
    Corrupt {
        /// Bytes of the member's deflate data read.
        offset: u64,
    },
}

/// Why [`gunzip`] gave no body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GunzipError {
    /// The body inflates past the limit.
    TooLarge,
    /// The body is not a gzip stream Go's reader reads.
    Gzip(GzipError),
}

impl From<GzipError> for GunzipError {
    fn from(err: GzipError) -> GunzipError {
        GunzipError::Gzip(err)
    }
}

/// The bytes `wire` inflates to, at most `limit` of them (see the module doc).
pub fn gunzip(wire: &[u8], limit: usize) -> Result<Vec<u8>, GunzipError> {
    let mut out = Vec::with_capacity(size_hint(wire).min(limit.saturating_add(1)));
    gunzip_into(wire, limit, &mut out)?;
    Ok(out)
}

/// [`gunzip`] into `out`, which keeps what was inflated before an error (an error excerpt's
/// bytes); at most `limit + 1` bytes are appended.
pub fn gunzip_into(wire: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), GunzipError> {
    INFLATER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut inflater) => members(wire, limit, out, &mut inflater),
        Err(_) => members(wire, limit, out, &mut Decompress::new(false)),
    })
}

thread_local! {
    /// This thread's inflater, reset for each member: its state (~7 KiB, zeroed when made) is
    /// allocated once per thread, not once per page.
    static INFLATER: std::cell::RefCell<Decompress> = std::cell::RefCell::new(Decompress::new(false));
}

/// [`gunzip_into`] with `inflater`.
fn members(
    wire: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
    inflater: &mut Decompress,
) -> Result<(), GunzipError> {
    let cap = out.len().saturating_add(limit).saturating_add(1);
    let mut rest = wire;
    loop {
        let start = match header(rest)? {
            Header::Member(len) => len,
            Header::End => return Ok(()),
        };
        rest = &rest[start..];
        inflater.reset(false);
        let from = out.len();
        let read = inflate(inflater, rest, out, cap)?;
        rest = &rest[read..];
        let trailer = rest.get(..8).ok_or(GzipError::UnexpectedEof)?;
        let mut crc = Crc::new();
        crc.update(&out[from..]);
        // The size is kept modulo 2³², as the trailer keeps it.
        let size = (out.len() - from) as u32;
        if trailer[..4] != crc.sum().to_le_bytes() || trailer[4..] != size.to_le_bytes() {
            return Err(GzipError::Checksum.into());
        }
        rest = &rest[8..];
    }
}

/// Where a member's deflate data begins, or the end of the body.
enum Header {
    Member(usize),
    End,
}

const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;

/// Reads a member's header at the start of `b` as Go's `Reader.readHeader` does.
fn header(b: &[u8]) -> Result<Header, GzipError> {
    let Some(fixed) = b.get(..10) else {
        // Go reads the fixed part with `io.ReadFull`: nothing is the end, a part is an error.
        return if b.is_empty() {
            Ok(Header::End)
        } else {
            Err(GzipError::UnexpectedEof)
        };
    };
    if fixed[..3] != [0x1f, 0x8b, 8] {
        return Err(GzipError::Header);
    }
    let flags = fixed[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = b.get(at..at + 2).ok_or(GzipError::UnexpectedEof)?;
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
        if at > b.len() {
            return Err(GzipError::UnexpectedEof);
        }
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            // Go keeps at most 511 bytes and the NUL; at the end of the body its `ReadByte`
            // returns `io.EOF` itself, which ends the body.
            let text = &b[at..];
            match text.iter().take(512).position(|&c| c == 0) {
                Some(nul) => at += nul + 1,
                None if text.len() < 512 => return Ok(Header::End),
                None => return Err(GzipError::Header),
            }
        }
    }
    if flags & FHCRC != 0 {
        let sum = b.get(at..at + 2).ok_or(GzipError::UnexpectedEof)?;
        // Go's digest at this point covers the 10 fixed bytes only.
        let mut crc = Crc::new();
        crc.update(fixed);
        if u32::from(u16::from_le_bytes([sum[0], sum[1]])) != crc.sum() & 0xffff {
            return Err(GzipError::Header);
        }
        at += 2;
    }
    Ok(Header::Member(at))
}

/// Inflates the deflate data at the start of `input` onto `out` (never past `cap` bytes in
/// all); the bytes of `input` it took.
fn inflate(
    inflater: &mut Decompress,
    input: &[u8],
    out: &mut Vec<u8>,
    cap: usize,
) -> Result<usize, GunzipError> {
    let start = inflater.total_in();
    loop {
        let read = (inflater.total_in() - start) as usize;
        if out.len() == out.capacity() {
            // Doubling, at least 32 KiB at a time, never past the cap.
            out.reserve_exact(out.len().max(32 << 10).min(cap - out.len()));
        }
        let before = (inflater.total_in(), out.len());
        let status = inflater.decompress_vec(&input[read..], out, FlushDecompress::None);
        if out.len() >= cap {
            out.truncate(cap);
            return Err(GunzipError::TooLarge);
        }
        match status {
            Ok(Status::StreamEnd) => return Ok((inflater.total_in() - start) as usize),
            Ok(Status::Ok | Status::BufError) => {
                // Room left and no end: the input ran out (or nothing moved, the same thing).
                let moved = (inflater.total_in(), out.len()) != before;
                if out.len() < out.capacity() && (read_all(inflater, start, input) || !moved) {
                    return Err(GzipError::UnexpectedEof.into());
                }
            }
            Err(_) => {
                let offset = inflater.total_in() - start;
                return Err(GzipError::Corrupt { offset }.into());
            }
        }
    }
}

fn read_all(inflater: &Decompress, start: u64, input: &[u8]) -> bool {
    (inflater.total_in() - start) as usize >= input.len()
}

/// The size the last member's trailer announces (modulo 2³², and only a hint: nothing is
/// trusted before it is inflated and checked).
fn size_hint(wire: &[u8]) -> usize {
    match wire.len().checked_sub(4).map(|at| &wire[at..]) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]) as usize,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(data).expect("in memory");
        gz.finish().expect("in memory")
    }

    fn text(n: usize) -> Vec<u8> {
        (0..n).map(|i| b"abcdefghij"[i * 7 % 10]).collect()
    }

    #[test]
    fn one_member_inflates_into_a_buffer_of_its_size() {
        let plain = text(10_000);
        let out = gunzip(&gzip(&plain), 1 << 20).expect("inflates");
        assert_eq!(out, plain);
        assert_eq!(
            out.capacity(),
            plain.len(),
            "sized by the trailer, never regrown"
        );
        assert_eq!(gunzip(&gzip(b""), 10), Ok(Vec::new()));
    }

    #[test]
    fn every_member_is_read() {
        let mut wire = gzip(b"{\"items\":[1,");
        wire.extend(gzip(b""));
        wire.extend(gzip(b"2,3],\"total\":3}"));
        assert_eq!(
            gunzip(&wire, 100).as_deref(),
            Ok(&b"{\"items\":[1,2,3],\"total\":3}"[..])
        );
    }

    /// Go's reader after a member: the end, a part of a header, or a header that is not one.
    #[test]
    fn what_follows_a_member_is_read_as_go_reads_it() {
        let member = gzip(b"{}");
        let after = |tail: &[u8]| {
            let mut wire = member.clone();
            wire.extend_from_slice(tail);
            gunzip(&wire, 100)
        };
        assert_eq!(after(b""), Ok(b"{}".to_vec()));
        assert_eq!(after(b"\n"), Err(GzipError::UnexpectedEof.into()));
        assert_eq!(after(&[0; 9]), Err(GzipError::UnexpectedEof.into()));
        assert_eq!(after(&[0; 10]), Err(GzipError::Header.into()));
        assert_eq!(
            after(b"<html>trailing</html>"),
            Err(GzipError::Header.into())
        );
        // The magic without deflate's method.
        assert_eq!(
            after(&[0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 0]),
            Err(GzipError::Header.into())
        );
        // A header cut inside its name: Go's `ReadByte` gives `io.EOF`, the end of the body.
        assert_eq!(
            after(&[0x1f, 0x8b, 8, FNAME, 0, 0, 0, 0, 0, 0, b'n']),
            Ok(b"{}".to_vec())
        );
        // A header whose deflate data never comes.
        assert_eq!(
            after(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0]),
            Err(GzipError::UnexpectedEof.into())
        );
    }

    #[test]
    fn headers_are_read_by_gos_rules() {
        let plain = b"{\"total\":0}";
        let data = &gzip(plain)[10..];
        let member = |head: &[u8]| {
            let mut wire = head.to_vec();
            wire.extend_from_slice(data);
            gunzip(&wire, 100)
        };
        let fixed = |flags: u8| [0x1f, 0x8b, 8, flags, 0, 0, 0, 0, 0, 3];
        // Reserved flag bits are ignored (zlib refuses them).
        assert_eq!(member(&fixed(0xe0)), Ok(plain.to_vec()));
        let mut extra = fixed(FEXTRA).to_vec();
        extra.extend_from_slice(&[3, 0, 1, 2, 3]);
        assert_eq!(member(&extra), Ok(plain.to_vec()));
        let named = |len: usize| {
            let mut head = fixed(FNAME | FCOMMENT).to_vec();
            head.extend(std::iter::repeat_n(b'n', len));
            head.push(0);
            head.extend_from_slice(b"comment\0");
            member(&head)
        };
        assert_eq!(named(511), Ok(plain.to_vec()));
        assert_eq!(named(512), Err(GzipError::Header.into()));
        // The header CRC covers the fixed bytes only, whatever follows them.
        let mut crc = Crc::new();
        crc.update(&fixed(FHCRC | FNAME));
        let sum = (crc.sum() as u16).to_le_bytes();
        let mut head = fixed(FHCRC | FNAME).to_vec();
        head.extend_from_slice(b"name\0");
        head.extend_from_slice(&sum);
        assert_eq!(member(&head), Ok(plain.to_vec()));
        let last = head.len() - 1;
        head[last] ^= 1;
        assert_eq!(member(&head), Err(GzipError::Header.into()));
        // An empty body is an empty body; a part of a header is not.
        assert_eq!(gunzip(b"", 100), Ok(Vec::new()));
        assert_eq!(
            gunzip(&fixed(0)[..4], 100),
            Err(GzipError::UnexpectedEof.into())
        );
        let mut cut = fixed(FEXTRA).to_vec();
        cut.extend_from_slice(&[9, 0, 1]);
        assert_eq!(gunzip(&cut, 100), Err(GzipError::UnexpectedEof.into()));
    }

    #[test]
    fn bad_data_and_trailers_are_gos_errors() {
        let wire = gzip(&text(1000));
        let mut crc = wire.clone();
        let at = crc.len() - 8;
        crc[at] ^= 1;
        assert_eq!(gunzip(&crc, 1 << 20), Err(GzipError::Checksum.into()));
        let mut size = wire.clone();
        let at = size.len() - 1;
        size[at] ^= 1;
        assert_eq!(gunzip(&size, 1 << 20), Err(GzipError::Checksum.into()));
        assert_eq!(
            gunzip(&wire[..wire.len() - 3], 1 << 20),
            Err(GzipError::UnexpectedEof.into())
        );
        assert_eq!(
            gunzip(&wire[..wire.len() / 2], 1 << 20),
            Err(GzipError::UnexpectedEof.into())
        );
        // A block of the reserved type 3 (final bit set).
        let mut bad = wire[..10].to_vec();
        bad.extend_from_slice(&[0x07, 0, 0, 0, 0]);
        assert!(matches!(
            gunzip(&bad, 1 << 20),
            Err(GunzipError::Gzip(GzipError::Corrupt { offset: 1 }))
        ));
        assert_eq!(
            GzipError::Corrupt { offset: 1 }.to_string(),
            "flate: corrupt input before offset 1"
        );
    }

    /// The limit counts inflated bytes, over all members: a body of exactly the limit reads, one
    /// byte more is refused, whether in one member, many, or a trailer announcing less.
    #[test]
    fn the_limit_bounds_every_member_together() {
        let limit = 100_000;
        assert_eq!(
            gunzip(&gzip(&text(limit)), limit).map(|b| b.len()),
            Ok(limit)
        );
        assert_eq!(
            gunzip(&gzip(&text(limit + 1)), limit),
            Err(GunzipError::TooLarge)
        );
        let member = gzip(&text(limit / 4));
        let wire: Vec<u8> = std::iter::repeat_n(&member[..], 5)
            .flatten()
            .copied()
            .collect();
        assert_eq!(gunzip(&wire, limit), Err(GunzipError::TooLarge));
        assert_eq!(
            gunzip(&wire[..member.len() * 4], limit).map(|b| b.len()),
            Ok(limit)
        );
        let mut liar = gzip(&text(limit + 1));
        let at = liar.len() - 4;
        liar[at..].copy_from_slice(&10u32.to_le_bytes());
        assert_eq!(gunzip(&liar, limit), Err(GunzipError::TooLarge));
        // What was inflated before an error is kept for an excerpt.
        let mut out = Vec::new();
        let refused = gunzip_into(&gzip(&text(1000)), 10, &mut out);
        assert_eq!((refused, out.len()), (Err(GunzipError::TooLarge), 11));
    }
}
