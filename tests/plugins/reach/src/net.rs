//! Resource types that use the network: TCP, name lookups, UDP (through `std::net`, which
//! is `wasi:sockets` on wasm32-wasip2) and HTTP (through `wasi:http` directly).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use plinth_sdk::{PropertyMap, ProviderError};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

use crate::{input, number, outputs};

/// How long to wait for a server's reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

fn failed(what: String, error: impl std::fmt::Display) -> ProviderError {
    ProviderError::failed(format!("{what}: {error}"))
}

/// Connects to `host:port`, sends `line` and returns the line the server answers.
pub(crate) fn tcp(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let (host, port, line) = (
        input(inputs, "host")?,
        number::<u16>(inputs, "port")?,
        input(inputs, "line")?,
    );
    let what = || format!("TCP exchange with {host}:{port}");
    let mut stream = TcpStream::connect((host, port)).map_err(|e| failed(what(), e))?;
    stream
        .set_read_timeout(Some(REPLY_TIMEOUT))
        .map_err(|e| failed(what(), e))?;
    writeln!(stream, "{line}").map_err(|e| failed(what(), e))?;
    let mut reply = String::new();
    BufReader::new(stream)
        .read_line(&mut reply)
        .map_err(|e| failed(what(), e))?;
    Ok(outputs([("reply", reply.trim_end().into())]))
}

/// Looks `host` up.
pub(crate) fn lookup(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let host = input(inputs, "host")?;
    let addresses: Vec<String> = (host, 0)
        .to_socket_addrs()
        .map_err(|e| failed(format!("looking up {host}"), e))?
        .map(|addr| addr.ip().to_string())
        .collect();
    Ok(outputs([("addresses", addresses.join(",").into())]))
}

/// Sends `message` to `host:port` and returns the datagram the server answers.
pub(crate) fn udp(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let (host, port, message) = (
        input(inputs, "host")?,
        number::<u16>(inputs, "port")?,
        input(inputs, "message")?,
    );
    let what = || format!("UDP exchange with {host}:{port}");
    // No read timeout: wasi:sockets has none for UDP; the call's deadline bounds the wait.
    let socket = UdpSocket::bind("0.0.0.0:0").map_err(|e| failed(what(), e))?;
    socket
        .send_to(message.as_bytes(), (host, port))
        .map_err(|e| failed(what(), e))?;
    let mut buf = [0u8; 1024];
    let (n, _) = socket.recv_from(&mut buf).map_err(|e| failed(what(), e))?;
    Ok(outputs([(
        "reply",
        String::from_utf8_lossy(&buf[..n]).into_owned().into(),
    )]))
}

/// GETs `url` through `wasi:http`, reporting the host's error code as it is.
pub(crate) fn http(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let url = input(inputs, "url")?;
    let what = || format!("HTTP GET {url}");
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => {
            return Err(ProviderError::invalid(
                "url",
                "an http:// or https:// URL is required",
            ));
        }
    };
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let request = OutgoingRequest::new(Fields::new());
    let invalid = |part: &str| failed(what(), format!("the {part} is invalid"));
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| invalid("scheme"))?;
    request
        .set_authority(Some(authority))
        .map_err(|()| invalid("authority"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| invalid("path"))?;
    let body = request.body().map_err(|()| invalid("body"))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| failed(what(), e))?;
    // A refused request may have dropped the body already; its response says why.
    let finished = OutgoingBody::finish(body, None);
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(response)) => response.map_err(|e| failed(what(), e))?,
        _ => return Err(failed(what(), "no response")),
    };
    finished.map_err(|e| failed(what(), e))?;
    let status = response.status();
    let body = response.consume().map_err(|()| invalid("response body"))?;
    let stream = body.stream().map_err(|()| invalid("response body"))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => bytes.extend(chunk),
            Err(StreamError::Closed) => break,
            Err(e) => return Err(failed(what(), format!("reading the body: {e:?}"))),
        }
    }
    Ok(outputs([
        ("status", i64::from(status).into()),
        ("body", String::from_utf8_lossy(&bytes).into_owned().into()),
    ]))
}
