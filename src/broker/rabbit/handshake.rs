//! A connection's opening: protocol header, `start`/`start-ok`, `tune`/`tune-ok`, `open`/
//! `open-ok`, before the driver takes the stream.
//!
//! Takes the two halves of a fresh stream and the URL; gives the [`Tuning`] both sides agreed
//! and the frame reader with whatever arrived after the last answer. The caller bounds it.

use super::tls::Stream;
use super::wire::{self, Inbound, Incoming, PROTOCOL_HEADER};
use amq_protocol::auth::Credentials;
use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{AMQPClass, AMQPError, connection};
use amq_protocol::types::{AMQPValue, FieldTable, ShortString};
use lapin::uri::AMQPUri;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};

/// What the connection was opened with and agreed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tuning {
    /// Negotiated heartbeat in seconds (0: none).
    pub heartbeat: u16,
    /// Negotiated largest frame.
    pub frame_max: u32,
    /// Negotiated highest channel number (0: no limit).
    pub channel_max: u16,
}

/// The smaller of two non-zero limits; when one side says 0 (no limit), the other's.
fn negotiate<T: Ord + Default + Copy>(ours: T, theirs: T) -> T {
    let zero = T::default();
    if ours == zero || theirs == zero {
        ours.max(theirs)
    } else {
        ours.min(theirs)
    }
}

/// A broker's `close` as an error text: lapin's wording (`protocol error: <kind>: <text>`).
pub(super) fn close_reason(code: u16, text: &ShortString) -> String {
    match AMQPError::from_id(code, text.clone()) {
        Some(e) => format!("protocol error: {e}"),
        None => format!("protocol error: {code} {text}"),
    }
}

pub(super) fn io_error(e: std::io::Error) -> String {
    e.to_string()
}

/// What the sentinel tells the broker about itself: its name and version, the capabilities a
/// publisher uses, and the connection name shown in the management UI.
fn client_properties(name: &str) -> FieldTable {
    let mut capabilities = FieldTable::default();
    for capability in [
        "publisher_confirms",
        "basic.nack",
        "connection.blocked",
        "authentication_failure_close",
    ] {
        capabilities.insert(capability.into(), AMQPValue::Boolean(true));
    }
    let mut props = FieldTable::default();
    props.insert(
        "product".into(),
        AMQPValue::LongString("hyperfleet-sentinel".into()),
    );
    props.insert(
        "version".into(),
        AMQPValue::LongString(env!("CARGO_PKG_VERSION").into()),
    );
    props.insert("platform".into(), AMQPValue::LongString("rust".into()));
    props.insert("capabilities".into(), AMQPValue::FieldTable(capabilities));
    props.insert("connection_name".into(), AMQPValue::LongString(name.into()));
    props
}

/// Opens the connection on a fresh stream: what was agreed, and the frame reader (holding
/// whatever arrived after the last answer, limited to the agreed frame size).
pub(super) async fn handshake(
    rd: &mut ReadHalf<Stream>,
    wr: &mut WriteHalf<Stream>,
    uri: &AMQPUri,
    name: &str,
) -> Result<(Tuning, Inbound), String> {
    let mut handshake = Handshake {
        rd,
        wr,
        inbound: Inbound::new(uri.query.frame_max.unwrap_or(1 << 20)),
    };
    let tuning = handshake.run(uri, name).await?;
    let mut inbound = handshake.inbound;
    inbound.limit(tuning.frame_max);
    Ok((tuning, inbound))
}

/// The connection's opening, before the driver takes the stream.
struct Handshake<'a> {
    rd: &'a mut ReadHalf<Stream>,
    wr: &'a mut WriteHalf<Stream>,
    inbound: Inbound,
}

impl Handshake<'_> {
    /// Protocol header, `start`/`start-ok` (the URL's mechanism, PLAIN unless it says
    /// otherwise), `tune`/`tune-ok` (each limit the smaller non-zero of ours and the broker's),
    /// `open`/`open-ok` on the URL's vhost.
    async fn run(&mut self, uri: &AMQPUri, name: &str) -> Result<Tuning, String> {
        self.wr.write_all(PROTOCOL_HEADER).await.map_err(io_error)?;
        let start = self
            .reply(|m| match m {
                connection::AMQPMethod::Start(s) => Ok(s),
                other => Err(other),
            })
            .await?;
        let mechanism = uri.query.auth_mechanism.unwrap_or_default();
        let offered = start.mechanisms.to_string();
        if !offered.split_whitespace().any(|m| m == mechanism.name()) {
            return Err(format!(
                "the broker does not offer the {mechanism} mechanism (it offers {offered})"
            ));
        }
        let user = &uri.authority.userinfo;
        let credentials =
            Credentials::new(user.username.as_str().into(), user.password.as_str().into());
        self.send(connection::AMQPMethod::StartOk(connection::StartOk {
            client_properties: client_properties(name),
            mechanism: mechanism.name().into(),
            response: credentials.sasl_auth_string(mechanism),
            locale: "en_US".into(),
        }))
        .await?;
        let tune = self
            .reply(|m| match m {
                connection::AMQPMethod::Tune(t) => Ok(t),
                other => Err(other),
            })
            .await?;
        let tuning = Tuning {
            heartbeat: negotiate(uri.query.heartbeat.unwrap_or(0), tune.heartbeat),
            frame_max: negotiate(uri.query.frame_max.unwrap_or(0), tune.frame_max)
                .max(wire::FRAME_MIN),
            channel_max: negotiate(uri.query.channel_max.unwrap_or(0), tune.channel_max),
        };
        self.send(connection::AMQPMethod::TuneOk(connection::TuneOk {
            channel_max: tuning.channel_max,
            frame_max: tuning.frame_max,
            heartbeat: tuning.heartbeat,
        }))
        .await?;
        let virtual_host = ShortString::try_new(uri.vhost.as_str())
            .map_err(|_| "vhost longer than 255 bytes".to_owned())?;
        self.send(connection::AMQPMethod::Open(connection::Open {
            virtual_host,
        }))
        .await?;
        self.reply(|m| match m {
            connection::AMQPMethod::OpenOk(ok) => Ok(ok),
            other => Err(other),
        })
        .await?;
        Ok(tuning)
    }

    /// Sends a connection-class method on channel 0.
    async fn send(&mut self, method: connection::AMQPMethod) -> Result<(), String> {
        let bytes = wire::control_bytes(&AMQPFrame::Method(0, AMQPClass::Connection(method)))?;
        self.wr.write_all(&bytes).await.map_err(io_error)
    }

    /// Reads until the broker's next connection method, which `want` accepts or gives back; a
    /// `connection.close` instead is answered and becomes the error.
    async fn reply<T>(
        &mut self,
        want: impl Fn(connection::AMQPMethod) -> Result<T, connection::AMQPMethod>,
    ) -> Result<T, String> {
        loop {
            while let Some(frame) = self.inbound.next().map_err(|e| e.to_string())? {
                let method = match frame {
                    Incoming::Method(0, AMQPClass::Connection(method)) => method,
                    Incoming::Heartbeat => continue,
                    other => {
                        return Err(format!("unexpected frame during the handshake: {other:?}"));
                    }
                };
                return match want(method) {
                    Ok(answer) => Ok(answer),
                    Err(connection::AMQPMethod::Close(close)) => {
                        let ok = connection::AMQPMethod::CloseOk(connection::CloseOk {});
                        let _ = self.send(ok).await;
                        Err(close_reason(close.reply_code, &close.reply_text))
                    }
                    Err(other) => Err(format!("unexpected method during the handshake: {other:?}")),
                };
            }
            match self.rd.read(self.inbound.spare()).await.map_err(io_error)? {
                0 => return Err("the broker closed the connection during the handshake".to_owned()),
                n => self.inbound.filled(n),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_the_smaller_non_zero() {
        assert_eq!(negotiate(10u16, 60), 10);
        assert_eq!(negotiate(0u16, 60), 60);
        assert_eq!(negotiate(3u16, 0), 3);
        assert_eq!(negotiate(16_384u32, 131_072), 16_384);
    }
}
