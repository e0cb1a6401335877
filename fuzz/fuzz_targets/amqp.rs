//! Bytes → the RabbitMQ publisher's AMQP frame reader, as they would arrive from a broker
//! (`sentinel::broker::check_frame_reader` says how: fed in chunks and at once, the same
//! frames; every confirm read by hand equal to amq-protocol's reading); the same bytes as an
//! `amqps://` URL → its TLS parameters (`TlsParams::from_url`). Nothing may panic or hang,
//! whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::broker::{TlsParams, check_frame_reader};

fuzz_target!(|data: &[u8]| {
    if let Err(why) = check_frame_reader(data) {
        panic!("{why}");
    }
    let url = String::from_utf8_lossy(data);
    let params = TlsParams::from_url(&url);
    let _ = params.warning();
});
