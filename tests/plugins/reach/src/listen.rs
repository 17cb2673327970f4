//! `reach:Listen`: binds a listening socket at a fixed local address, which only a
//! `tcp-listen` or `udp-listen` grant allows (a `tcp` or `udp` grant is for reaching peers).

use std::net::{TcpListener, UdpSocket};

use plinth_sdk::{PropertyMap, ProviderError};

use crate::{input, outputs};

/// Binds `address` (`host:port`) for `protocol` (`tcp`: and listens), reports the address bound,
/// and closes the socket.
pub(crate) fn listen(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let (protocol, address) = (input(inputs, "protocol")?, input(inputs, "address")?);
    let what = |e: std::io::Error| {
        ProviderError::failed(format!("listening on {protocol} {address}: {e}"))
    };
    let bound = match protocol {
        "tcp" => TcpListener::bind(address).and_then(|l| l.local_addr()),
        "udp" => UdpSocket::bind(address).and_then(|s| s.local_addr()),
        _ => return Err(ProviderError::invalid("protocol", "`tcp` or `udp`")),
    }
    .map_err(what)?;
    Ok(outputs([("bound", bound.to_string().into())]))
}
