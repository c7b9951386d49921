//! stdin and stdout as the stdio transport reads and writes them.
//!
//! When they are pipes (what every MCP client gives its server), they are read and written as
//! non-blocking pipes on the runtime's own thread, whose memory is returned to the system when
//! the session goes quiet; tokio's `stdin()` / `stdout()` would copy every message through a
//! blocking-pool thread, which keeps the buffers of large answers. Any other kind of file (a
//! terminal, a regular file) keeps tokio's.

use std::os::fd::AsFd;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// A duplicate of a descriptor, as a file.
fn duplicate(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<std::fs::File> {
    fd.try_clone_to_owned().map(std::fs::File::from)
}

/// The process's stdin.
pub fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    match duplicate(std::io::stdin().as_fd()).and_then(pipe::Receiver::from_file) {
        Ok(pipe) => Box::new(pipe),
        Err(e) => {
            tracing::debug!("stdin is not a pipe ({e}): reading it on the blocking pool");
            Box::new(tokio::io::stdin())
        }
    }
}

/// The process's stdout.
pub fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    match duplicate(std::io::stdout().as_fd()).and_then(pipe::Sender::from_file) {
        Ok(pipe) => Box::new(pipe),
        Err(e) => {
            tracing::debug!("stdout is not a pipe ({e}): writing it on the blocking pool");
            Box::new(tokio::io::stdout())
        }
    }
}
