//! Listening sockets with a backlog sized for bursts.
//!
//! `tokio::net::TcpListener::bind` (through mio) listens with the standard
//! library's backlog of 128. A burst of new connections beyond that, while
//! the server is busy, overflows the kernel's accept queue; Linux then drops
//! the handshake and the client retries after its 1 s SYN timeout. Measured
//! here: 1,000 simultaneous `POST /conversations` against a 1 s model took
//! 2.2 s, 400 of them a full second late, all in the connect. [`listen`]
//! asks for [`BACKLOG`] (the kernel caps it at `net.core.somaxconn`).

use tokio::net::{TcpListener, TcpSocket};

/// The accept queue asked for.
pub const BACKLOG: u32 = 4096;

/// Binds `addr` (`host:port`; the host may be a name) with [`BACKLOG`],
/// trying each address the name resolves to.
pub async fn listen(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let socket = if a.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket.bind(a).and_then(|()| socket.listen(BACKLOG)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            format!("{addr} resolves to no address"),
        )
    }))
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn listens_on_a_free_port_and_accepts() {
        let l = super::listen("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let connect = tokio::net::TcpStream::connect(addr);
        let (c, a) = tokio::join!(connect, l.accept());
        assert!(c.is_ok() && a.is_ok());
    }

    #[tokio::test]
    async fn a_name_that_does_not_resolve_is_an_error() {
        assert!(super::listen("no-such-host.invalid:80").await.is_err());
    }
}
