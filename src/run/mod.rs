//! Running real servers: sandboxes, child processes, a plain HTTP client.
//!
//! Everything here touches the operating system, and only inside a sandbox folder and
//! on loopback ports.  Nothing under /etc is read for writing, no system service is used.

pub mod apache;
pub mod http;
pub mod lighttpd;
pub mod observe;
pub mod php;
pub mod preflight;
pub mod process;
pub mod sandbox;
