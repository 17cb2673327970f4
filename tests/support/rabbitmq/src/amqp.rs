//! Logging in over AMQP 0-9-1, as an application does, up to the broker's answer to the
//! credentials: `Connection.Tune` (accepted) or `Connection.Close` with 403 (refused). Enough of
//! the protocol for that and no more — a test asks whether a password works without starting an
//! Erlang VM for `rabbitmqctl authenticate_user`.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::time::Duration;

use crate::{Error, Result};

/// How long a read may wait: only tells a hung broker from a slow one.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// The protocol header a 0-9-1 client opens with.
const PROTOCOL_HEADER: &[u8] = b"AMQP\x00\x00\x09\x01";
const FRAME_METHOD: u8 = 1;
const FRAME_END: u8 = 0xCE;
/// Class `connection` and the methods of it the exchange uses.
const CONNECTION: u16 = 10;
const START: u16 = 10;
const START_OK: u16 = 11;
const TUNE: u16 = 30;
const CLOSE: u16 = 50;
/// `Connection.Close`'s reply code for refused credentials.
const ACCESS_REFUSED: u16 = 403;
/// The most bytes a frame before the credentials' answer may hold (the broker's `frame_max`
/// before tuning is 4096; its Start frame is well under it).
const MAX_FRAME: u32 = 131_072;

/// Whether `user` logs in with `password` at the broker's AMQP port `port`.
pub(crate) fn logs_in(port: u16, user: &str, password: &str) -> Result<bool> {
    exchange(port, user, password)
        .map_err(|reason| Error(format!("AMQP login as {user} on port {port}: {reason}")))
}

/// The exchange up to the broker's answer to the credentials; an error says what went wrong.
fn exchange(port: u16, user: &str, password: &str) -> Result<bool, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).map_err(io)?;
    stream.set_read_timeout(Some(READ_TIMEOUT)).map_err(io)?;
    stream.write_all(PROTOCOL_HEADER).map_err(io)?;
    let (class, method, _) = read_method(&mut stream)?;
    if (class, method) != (CONNECTION, START) {
        return Err(format!(
            "the broker opened with method {class}.{method}, not Connection.Start"
        ));
    }
    stream.write_all(&start_ok(user, password)).map_err(io)?;
    match read_method(&mut stream)? {
        (CONNECTION, TUNE, _) => Ok(true),
        (CONNECTION, CLOSE, args) if args.get(..2) == Some(&ACCESS_REFUSED.to_be_bytes()) => {
            Ok(false)
        }
        (class, method, args) => Err(format!(
            "the broker answered the credentials with method {class}.{method} ({})",
            String::from_utf8_lossy(&args)
        )),
    }
}

/// Reads one method frame: its class, method and arguments.
fn read_method(stream: &mut TcpStream) -> Result<(u16, u16, Vec<u8>), String> {
    let mut header = [0; 7];
    stream.read_exact(&mut header).map_err(|e| e.to_string())?;
    let size = u32::from_be_bytes([header[3], header[4], header[5], header[6]]);
    if header[0] != FRAME_METHOD || !(4..=MAX_FRAME).contains(&size) {
        return Err(format!(
            "not a method frame (type {}, {size} bytes)",
            header[0]
        ));
    }
    let mut payload = vec![0; size as usize + 1];
    stream.read_exact(&mut payload).map_err(|e| e.to_string())?;
    if payload.pop() != Some(FRAME_END) {
        return Err("a frame without its end marker".to_owned());
    }
    let class = u16::from_be_bytes([payload[0], payload[1]]);
    let method = u16::from_be_bytes([payload[2], payload[3]]);
    Ok((class, method, payload.split_off(4)))
}

/// The `Connection.StartOk` frame with the PLAIN credentials, announcing the
/// `authentication_failure_close` capability so that refused credentials are answered with
/// `Connection.Close` rather than a dropped connection.
fn start_ok(user: &str, password: &str) -> Vec<u8> {
    let mut capabilities = Vec::new();
    short_string(&mut capabilities, "authentication_failure_close");
    capabilities.extend_from_slice(&[b't', 1]);
    let mut properties = Vec::new();
    short_string(&mut properties, "capabilities");
    properties.push(b'F');
    long_bytes(&mut properties, &capabilities);

    let mut payload = Vec::new();
    payload.extend_from_slice(&CONNECTION.to_be_bytes());
    payload.extend_from_slice(&START_OK.to_be_bytes());
    long_bytes(&mut payload, &properties);
    short_string(&mut payload, "PLAIN");
    long_bytes(&mut payload, format!("\0{user}\0{password}").as_bytes());
    short_string(&mut payload, "en_US");

    let mut frame = vec![FRAME_METHOD, 0, 0];
    long_bytes(&mut frame, &payload);
    frame.push(FRAME_END);
    frame
}

/// A short string: one length byte, then the bytes (the names here are all short).
fn short_string(out: &mut Vec<u8>, text: &str) {
    out.push(u8::try_from(text.len()).expect("a short string"));
    out.extend_from_slice(text.as_bytes());
}

/// A long string or table: its length as four bytes, then the bytes.
fn long_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(
        &u32::try_from(bytes.len())
            .expect("under 4 GiB")
            .to_be_bytes(),
    );
    out.extend_from_slice(bytes);
}
