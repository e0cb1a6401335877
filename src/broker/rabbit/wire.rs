//! AMQP 0-9-1 frames as a publisher writes and reads them.
//!
//! Takes amq-protocol's frame types for everything but the hot path; gives [`control`] (any
//! control frame, serialised by amq-protocol), [`PublishFrames`] (a publish's three frames from a
//! template made once per channel) and [`Inbound`] (the frame reader: incoming bytes split into
//! frames of at most the negotiated size, each decoded into an [`Incoming`]).
//!
//! Tactics: a publish's method frame does not change within a channel and its content header
//! differs only in the body size and the 36-byte message UUID, so both are serialised once, by
//! amq-protocol, and copied per event with those two fields patched; the body follows as one
//! frame, or several when it exceeds `frame_max - 8`. On the way in, `Basic.Ack` and
//! `Basic.Nack` (the frames a confirming publisher mostly hears) are read by hand — 13 bytes
//! each; every other frame goes through amq-protocol's parser.
//!
//! Invariant: the reader never holds more than one frame of the negotiated size and refuses a
//! larger or malformed frame with an error; no input makes it panic.

use crate::broker::event::Event;
use amq_protocol::frame::{AMQPContentHeader, AMQPFrame, WriteContext, gen_frame, parse_frame};
use amq_protocol::protocol::{AMQPClass, BasicProperties, basic};
use amq_protocol::types::{AMQPValue, FieldTable, LongString, ShortString};

use amq_protocol::protocol::constants::{
    FRAME_BODY, FRAME_END, FRAME_HEADER, FRAME_HEARTBEAT, FRAME_METHOD,
};
/// A frame's type, channel and size (7 bytes) and its end octet.
const FRAME_OVERHEAD: usize = 8;
/// The smallest frame size a peer must accept (AMQP's `frame-min-size`).
pub(super) const FRAME_MIN: u32 = 4096;
/// Basic (class 60) `ack` (80) and `nack` (120): class, method, delivery tag, flags.
const CONFIRM_PAYLOAD: usize = 13;

/// A heartbeat frame.
pub(super) const HEARTBEAT: [u8; 8] = [FRAME_HEARTBEAT, 0, 0, 0, 0, 0, 0, FRAME_END];

/// The protocol header a client opens with.
pub(super) const PROTOCOL_HEADER: &[u8; 8] = b"AMQP\x00\x00\x09\x01";

/// `frame` serialised by amq-protocol, appended to `out`.
pub(super) fn control(out: &mut Vec<u8>, frame: &AMQPFrame) -> Result<(), String> {
    let ctx = WriteContext::from(std::mem::take(out));
    match gen_frame(frame)(ctx) {
        Ok(ctx) => {
            *out = ctx.write;
            Ok(())
        }
        Err(e) => Err(format!("cannot encode {frame}: {e}")),
    }
}

/// `frame` serialised alone.
pub(super) fn control_bytes(frame: &AMQPFrame) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    control(&mut out, frame)?;
    Ok(out)
}

/// What the routing of every publish on a channel says (exchange, routing key).
pub(super) struct Route<'a> {
    /// The exchange.
    pub exchange: &'a ShortString,
    /// The routing key.
    pub routing_key: &'a ShortString,
}

/// The AMQP header watermill reads the message UUID from.
pub const UUID_HEADER: &str = "_watermill_message_uuid";

/// A hyphenated UUID's length, the one header value's length.
const UUID_LEN: usize = uuid::fmt::Hyphenated::LENGTH;

/// The frames of a publish on one channel: the `Basic.Publish` method frame and a content header
/// template (persistent, the one `_watermill_message_uuid` header) serialised once, and where in
/// the template the body size and the UUID go.
#[derive(Clone, Debug)]
pub(super) struct PublishFrames {
    method: Vec<u8>,
    header: Vec<u8>,
    /// Offset of the body size (u64) in `header`.
    size_at: usize,
    /// Offset of the UUID's 36 bytes in `header`.
    uuid_at: usize,
    /// The body frame's first 7 bytes, size zero.
    body_start: [u8; 7],
    /// The largest body a single frame carries: `frame_max - 8`.
    max_chunk: usize,
}

impl PublishFrames {
    /// The frames for publishes on `channel` along `route`, bodies split at `frame_max`.
    pub(super) fn new(
        channel: u16,
        route: &Route,
        frame_max: u32,
    ) -> Result<PublishFrames, String> {
        let publish = basic::AMQPMethod::Publish(basic::Publish {
            exchange: route.exchange.clone(),
            routing_key: route.routing_key.clone(),
            mandatory: false,
            immediate: false,
        });
        let method = control_bytes(&AMQPFrame::Method(channel, AMQPClass::Basic(publish)))?;
        // A placeholder no serialisation of the rest of the header can contain.
        let placeholder = [b'#'; UUID_LEN];
        let header = control_bytes(&AMQPFrame::Header(channel, content_header(&placeholder, 0)))?;
        let uuid_at = header
            .windows(UUID_LEN)
            .position(|w| w == placeholder)
            .ok_or("the content header template holds no message id")?;
        let [hi, lo] = channel.to_be_bytes();
        Ok(PublishFrames {
            method,
            header,
            // Frame type, channel, size; then class id and weight.
            size_at: 7 + 2 + 2,
            uuid_at,
            body_start: [FRAME_BODY, hi, lo, 0, 0, 0, 0],
            max_chunk: (frame_max.max(FRAME_MIN) as usize) - FRAME_OVERHEAD,
        })
    }

    /// Appends the publish of `event` to `out`: method, header, body frame(s). `spill` is
    /// scratch for a body larger than one frame (kept by the caller, reused).
    pub(super) fn encode(&self, out: &mut Vec<u8>, event: &Event, spill: &mut Vec<u8>) {
        out.extend_from_slice(&self.method);
        let header = out.len();
        out.extend_from_slice(&self.header);
        let id = &mut out[header + self.uuid_at..header + self.uuid_at + UUID_LEN];
        event.id.hyphenated().encode_lower(id);
        let body = out.len();
        out.extend_from_slice(&self.body_start);
        event.encode_into(out);
        let len = out.len() - body - self.body_start.len();
        let size_at = header + self.size_at;
        out[size_at..size_at + 8].copy_from_slice(&(len as u64).to_be_bytes());
        if len <= self.max_chunk {
            out[body + 3..body + 7].copy_from_slice(&(len as u32).to_be_bytes());
            out.push(FRAME_END);
            return;
        }
        // Rare: a body larger than a frame is re-emitted in frame-sized chunks.
        spill.clear();
        spill.extend_from_slice(&out[body + self.body_start.len()..]);
        out.truncate(body);
        for chunk in spill.chunks(self.max_chunk) {
            out.extend_from_slice(&self.body_start);
            let at = out.len() - 4;
            out[at..].copy_from_slice(&(chunk.len() as u32).to_be_bytes());
            out.extend_from_slice(chunk);
            out.push(FRAME_END);
        }
    }
}

/// The content header of a watermill message: persistent, no content type, exactly one header,
/// `_watermill_message_uuid` = `id`.
fn content_header(id: &[u8], body_size: u64) -> AMQPContentHeader {
    let mut headers = FieldTable::default();
    headers.insert(
        ShortString::from(UUID_HEADER),
        AMQPValue::LongString(LongString::from(id.to_vec())),
    );
    AMQPContentHeader {
        class_id: 60,
        body_size,
        properties: BasicProperties::default()
            .with_delivery_mode(2)
            .with_headers(headers),
    }
}

/// One incoming frame, as the publisher needs it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Incoming {
    /// A heartbeat.
    Heartbeat,
    /// `Basic.Ack`: the broker has taken responsibility for `tag` (and, with `multiple`, every
    /// earlier tag).
    Ack {
        /// The channel.
        channel: u16,
        /// The delivery tag.
        tag: u64,
        /// Whether every unconfirmed tag up to `tag` is meant.
        multiple: bool,
    },
    /// `Basic.Nack`: as `Ack`, refused.
    Nack {
        /// The channel.
        channel: u16,
        /// The delivery tag.
        tag: u64,
        /// Whether every unconfirmed tag up to `tag` is meant.
        multiple: bool,
    },
    /// Any other method.
    Method(u16, AMQPClass),
    /// A content header or body (a publisher asks for none; `Basic.Return` content, say).
    Content(u16),
}

/// Why the incoming stream cannot be read on: the connection must be dropped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum FrameError {
    /// A frame type AMQP does not have (`AMQP` here is the broker refusing our protocol).
    #[error("unknown AMQP frame type {0}")]
    UnknownType(u8),
    /// A frame larger than the negotiated maximum.
    #[error("AMQP frame of {size} bytes exceeds frame_max {max}")]
    TooLarge {
        /// The frame's size with header and end octet.
        size: u64,
        /// The negotiated maximum.
        max: usize,
    },
    /// A frame not followed by the frame-end octet.
    #[error("AMQP frame without its frame-end octet")]
    NoFrameEnd,
    /// A frame whose payload does not parse.
    #[error("malformed AMQP frame (type {0})")]
    Malformed(u8),
}

/// The size of the first frame of `buf` when it is complete, `None` when more bytes are needed.
fn frame_len(buf: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
    let Some(&ty) = buf.first() else {
        return Ok(None);
    };
    if !matches!(
        ty,
        FRAME_METHOD | FRAME_HEADER | FRAME_BODY | FRAME_HEARTBEAT
    ) {
        return Err(FrameError::UnknownType(ty));
    }
    let Some(size) = buf.get(3..7) else {
        return Ok(None);
    };
    let size = u64::from(u32::from_be_bytes([size[0], size[1], size[2], size[3]]));
    let total = size + FRAME_OVERHEAD as u64;
    if total > max as u64 {
        return Err(FrameError::TooLarge { size: total, max });
    }
    let total = total as usize;
    match buf.get(total - 1) {
        None => Ok(None),
        Some(&FRAME_END) => Ok(Some(total)),
        Some(_) => Err(FrameError::NoFrameEnd),
    }
}

/// Decodes one complete frame (header and end octet included).
fn decode(frame: &[u8]) -> Result<Incoming, FrameError> {
    let ty = frame[0];
    let channel = u16::from_be_bytes([frame[1], frame[2]]);
    let payload = &frame[7..frame.len() - 1];
    if ty == FRAME_METHOD && payload.len() == CONFIRM_PAYLOAD {
        let method = [payload[0], payload[1], payload[2], payload[3]];
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&payload[4..12]);
        let tag = u64::from_be_bytes(tag);
        let multiple = payload[12] & 1 == 1;
        match method {
            [0, 60, 0, 80] => {
                return Ok(Incoming::Ack {
                    channel,
                    tag,
                    multiple,
                });
            }
            [0, 60, 0, 120] => {
                return Ok(Incoming::Nack {
                    channel,
                    tag,
                    multiple,
                });
            }
            _ => {}
        }
    }
    match parse_frame(frame) {
        Ok((_, AMQPFrame::Method(channel, class))) => Ok(Incoming::Method(channel, class)),
        Ok((_, AMQPFrame::Header(channel, _) | AMQPFrame::Body(channel, _))) => {
            Ok(Incoming::Content(channel))
        }
        Ok((_, AMQPFrame::Heartbeat | AMQPFrame::InvalidHeartbeat(_))) => Ok(Incoming::Heartbeat),
        Ok((_, AMQPFrame::ProtocolHeader(_))) | Err(_) => Err(FrameError::Malformed(ty)),
    }
}

/// The incoming side of a connection: bytes as they arrive, split into frames.
pub(super) struct Inbound {
    buf: Vec<u8>,
    /// The largest frame accepted (at most the buffer's length).
    max: usize,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
}

impl Inbound {
    /// A reader of frames of at most `frame_max` bytes (at least AMQP's minimum).
    pub(super) fn new(frame_max: u32) -> Inbound {
        let len = frame_max.max(FRAME_MIN) as usize;
        Inbound {
            buf: vec![0; len],
            max: len,
            start: 0,
            end: 0,
        }
    }

    /// Accepts frames of at most `frame_max` bytes from now on (what was negotiated, when less
    /// than the buffer was made for).
    pub(super) fn limit(&mut self, frame_max: u32) {
        self.max = (frame_max.max(FRAME_MIN) as usize).min(self.buf.len());
    }

    /// Where the next read goes: never empty, since a frame that fits is consumed before the
    /// buffer fills (see [`Inbound::next`]).
    pub(super) fn spare(&mut self) -> &mut [u8] {
        if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    /// Records that `n` bytes were read into [`Inbound::spare`].
    pub(super) fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The next complete frame, `None` when more bytes are needed.
    pub(super) fn next(&mut self) -> Result<Option<Incoming>, FrameError> {
        let unread = &self.buf[self.start..self.end];
        let Some(len) = frame_len(unread, self.max)? else {
            if self.start == self.end {
                (self.start, self.end) = (0, 0);
            }
            return Ok(None);
        };
        let frame = decode(&unread[..len]);
        self.start += len;
        frame.map(Some)
    }
}

/// Feeds `data` to the frame reader (`Inbound`) in chunks (their sizes taken from the data)
/// and checks what it decodes: the same frames as reading the whole at once, and every
/// `Basic.Ack` / `Basic.Nack` read by hand equal to amq-protocol's reading of the same bytes.
/// What the `amqp` fuzz target and the regression test run.
pub fn check_reader(data: &[u8]) -> Result<(), String> {
    let frame_max = FRAME_MIN + u32::from(data.first().copied().unwrap_or(0)) * 64;
    let whole = read_all(data, data.len().max(1), frame_max)?;
    let step = usize::from(data.get(1).copied().unwrap_or(1)).max(1);
    let chunked = read_all(data, step, frame_max)?;
    if whole != chunked {
        return Err(format!(
            "reading in chunks of {step} gave {chunked:?}, at once {whole:?}"
        ));
    }
    Ok(())
}

/// The frames an [`Inbound`] reads from `data` fed `step` bytes at a time, up to the first error.
fn read_all(
    data: &[u8],
    step: usize,
    frame_max: u32,
) -> Result<Vec<Result<Incoming, FrameError>>, String> {
    let mut inbound = Inbound::new(frame_max);
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let spare = inbound.spare();
        let n = step.min(spare.len()).min(rest.len());
        spare[..n].copy_from_slice(&rest[..n]);
        rest = &rest[n..];
        inbound.filled(n);
        loop {
            let before = inbound.start;
            match inbound.next() {
                Ok(None) => break,
                Ok(Some(frame)) => {
                    let bytes = &inbound.buf[before..inbound.start];
                    agrees_with_amq_protocol(bytes, &frame)?;
                    out.push(Ok(frame));
                }
                Err(e) => {
                    out.push(Err(e));
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

/// A hand-read confirm must be what amq-protocol reads.
fn agrees_with_amq_protocol(bytes: &[u8], frame: &Incoming) -> Result<(), String> {
    let (channel, method) = match *frame {
        Incoming::Ack {
            channel,
            tag,
            multiple,
        } => (
            channel,
            basic::AMQPMethod::Ack(basic::Ack {
                delivery_tag: tag,
                multiple,
            }),
        ),
        Incoming::Nack {
            channel,
            tag,
            multiple,
        } => (
            channel,
            basic::AMQPMethod::Nack(basic::Nack {
                delivery_tag: tag,
                multiple,
                requeue: bytes[bytes.len() - 2] & 2 == 2,
            }),
        ),
        _ => return Ok(()),
    };
    match parse_frame(bytes) {
        Ok((_, AMQPFrame::Method(ch, AMQPClass::Basic(m)))) if ch == channel && m == method => {
            Ok(())
        }
        other => Err(format!(
            "read {frame:?} by hand, amq-protocol reads {other:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After tuning, a frame is held to the negotiated size, not the buffer's.
    #[test]
    fn frames_past_the_negotiated_size_are_refused() {
        let mut body = vec![FRAME_BODY, 0, 1];
        body.extend_from_slice(&5000u32.to_be_bytes());
        body.resize(7 + 5000, b'x');
        body.push(FRAME_END);
        let mut whole = Inbound::new(1 << 20);
        let mut limited = Inbound::new(1 << 20);
        limited.limit(FRAME_MIN);
        for (inbound, fits) in [(&mut whole, true), (&mut limited, false)] {
            inbound.spare()[..body.len()].copy_from_slice(&body);
            inbound.filled(body.len());
            match inbound.next() {
                Ok(Some(_)) => assert!(fits),
                Err(FrameError::TooLarge { size: 5008, max }) => {
                    assert!(!fits);
                    assert_eq!(max, FRAME_MIN as usize);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    /// The frames written as constants are amq-protocol's.
    #[test]
    fn the_constant_frames_are_amq_protocol_s() {
        use amq_protocol::frame::ProtocolVersion;
        assert_eq!(control_bytes(&AMQPFrame::Heartbeat), Ok(HEARTBEAT.to_vec()));
        let header = AMQPFrame::ProtocolHeader(ProtocolVersion::amqp_0_9_1());
        assert_eq!(control_bytes(&header), Ok(PROTOCOL_HEADER.to_vec()));
    }
    use amq_protocol::protocol::{channel as amqp_channel, connection};
    use serde_json::json;

    fn route() -> (ShortString, ShortString) {
        (
            ShortString::from("events"),
            ShortString::from("cluster.key"),
        )
    }

    fn frames(frame_max: u32) -> PublishFrames {
        let (exchange, routing_key) = route();
        let route = Route {
            exchange: &exchange,
            routing_key: &routing_key,
        };
        PublishFrames::new(7, &route, frame_max).expect("template")
    }

    /// amq-protocol's serialisation of the same publish, split into `chunk`-sized body frames.
    fn reference(event: &Event, chunk: usize) -> Vec<u8> {
        let (exchange, routing_key) = route();
        let body = event.to_bytes();
        let id = event.id.hyphenated().to_string();
        let mut out = Vec::new();
        let publish = basic::AMQPMethod::Publish(basic::Publish {
            exchange,
            routing_key,
            mandatory: false,
            immediate: false,
        });
        let frames = [
            AMQPFrame::Method(7, AMQPClass::Basic(publish)),
            AMQPFrame::Header(7, content_header(id.as_bytes(), body.len() as u64)),
        ];
        for frame in &frames {
            control(&mut out, frame).expect("encodes");
        }
        for part in body.chunks(chunk) {
            control(&mut out, &AMQPFrame::Body(7, part.to_vec())).expect("encodes");
        }
        out
    }

    #[test]
    fn a_publish_is_byte_equal_to_amq_protocol_s() {
        let event = Event::new("Cluster", json!({"id": "c1", "generation": 3}));
        let mut out = Vec::new();
        let mut spill = Vec::new();
        frames(16 * 1024).encode(&mut out, &event, &mut spill);
        assert_eq!(out, reference(&event, usize::MAX));
        // Appends: a page is one buffer of consecutive publishes.
        let second = Event::new("NodePool", json!({"id": "n1"}));
        frames(16 * 1024).encode(&mut out, &second, &mut spill);
        let mut both = reference(&event, usize::MAX);
        both.extend(reference(&second, usize::MAX));
        assert_eq!(out, both);
    }

    #[test]
    fn a_body_larger_than_a_frame_is_split() {
        let big = "x".repeat(10_000);
        let event = Event::new("Cluster", json!({"id": "c1", "big": big}));
        let mut out = Vec::new();
        frames(FRAME_MIN).encode(&mut out, &event, &mut Vec::new());
        let chunk = FRAME_MIN as usize - FRAME_OVERHEAD;
        assert!(event.to_bytes().len() > 2 * chunk);
        assert_eq!(out, reference(&event, chunk));
    }

    fn read(bytes: &[u8]) -> Vec<Result<Incoming, FrameError>> {
        read_all(bytes, 3, FRAME_MIN).expect("agrees with amq-protocol")
    }

    fn confirm(method: u16, tag: u64, flags: u8) -> Vec<u8> {
        let mut f = vec![FRAME_METHOD, 0, 1, 0, 0, 0, 13, 0, 60];
        f.extend(method.to_be_bytes());
        f.extend(tag.to_be_bytes());
        f.extend([flags, FRAME_END]);
        f
    }

    #[test]
    fn acks_and_nacks_are_read_with_their_multiple_flag() {
        let mut bytes = confirm(80, 5, 0);
        bytes.extend(confirm(80, 9, 1));
        bytes.extend(confirm(120, 12, 3));
        bytes.extend(HEARTBEAT);
        assert_eq!(
            read(&bytes),
            [
                Ok(Incoming::Ack {
                    channel: 1,
                    tag: 5,
                    multiple: false
                }),
                Ok(Incoming::Ack {
                    channel: 1,
                    tag: 9,
                    multiple: true
                }),
                Ok(Incoming::Nack {
                    channel: 1,
                    tag: 12,
                    multiple: true
                }),
                Ok(Incoming::Heartbeat),
            ]
        );
        // The hand reading agrees with amq-protocol's.
        assert_eq!(check_reader(&bytes), Ok(()));
    }

    #[test]
    fn other_methods_go_through_amq_protocol() {
        let close = AMQPFrame::Method(
            1,
            AMQPClass::Channel(amqp_channel::AMQPMethod::Close(amqp_channel::Close {
                reply_code: 404,
                reply_text: "NOT_FOUND - no exchange 'x'".into(),
                class_id: 60,
                method_id: 40,
            })),
        );
        let blocked = AMQPFrame::Method(
            0,
            AMQPClass::Connection(connection::AMQPMethod::Blocked(connection::Blocked {
                reason: "low on memory".into(),
            })),
        );
        let mut bytes = control_bytes(&close).expect("close");
        control(&mut bytes, &blocked).expect("blocked");
        let want: Vec<_> = [close, blocked]
            .into_iter()
            .map(|f| match f {
                AMQPFrame::Method(ch, class) => Ok(Incoming::Method(ch, class)),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(read(&bytes), want);
    }

    #[test]
    fn bad_frames_are_errors() {
        assert_eq!(
            read(b"AMQP\x00\x00\x09\x01"),
            [Err(FrameError::UnknownType(b'A'))]
        );
        let mut no_end = confirm(80, 1, 0);
        *no_end.last_mut().expect("end") = 0;
        assert_eq!(read(&no_end), [Err(FrameError::NoFrameEnd)]);
        let huge = [FRAME_BODY, 0, 1, 0, 1, 0, 0];
        assert_eq!(
            read(&huge),
            [Err(FrameError::TooLarge {
                size: 65_536 + 8,
                max: FRAME_MIN as usize
            })]
        );
        // A method frame whose payload is not a method.
        let garbage = [FRAME_METHOD, 0, 1, 0, 0, 0, 2, 0xff, 0xff, FRAME_END];
        assert_eq!(read(&garbage), [Err(FrameError::Malformed(FRAME_METHOD))]);
        // Incomplete input is not an error, only unfinished.
        assert_eq!(read(&confirm(80, 1, 0)[..10]), []);
    }
}
