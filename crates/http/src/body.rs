//! Request bodies read whole under a size limit.

use axum::body::{Body, Bytes};

/// How much of an oversized body is read and discarded before giving up, in multiples of the
/// limit: a client still sending reads the refusal instead of a reset connection.
const DRAIN_FACTOR: usize = 4;

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the request body is larger than {max} bytes")]
    TooLarge { max: usize },
    /// Broken framing (bad chunked encoding, a connection cut mid-body).
    #[error("cannot read the request body: {0}")]
    Broken(String),
}

/// Reads a body whole, at most `max` bytes. An oversized one is read on and dropped up to
/// [`DRAIN_FACTOR`] times the limit, then left unread (the caller closes the connection).
pub async fn read_bounded(mut body: Body, max: usize) -> Result<Bytes, BodyError> {
    use http_body_util::BodyExt;
    let mut kept: Vec<u8> = Vec::new();
    let mut seen: usize = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Broken(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen <= max {
            kept.extend_from_slice(&data);
        } else if seen > max.saturating_mul(DRAIN_FACTOR) {
            break;
        }
    }
    if seen > max {
        return Err(BodyError::TooLarge { max });
    }
    Ok(Bytes::from(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_are_read_up_to_the_limit() {
        let ok = read_bounded(Body::from("0123456789"), 10).await.unwrap();
        assert_eq!(&ok[..], b"0123456789");
        let big = read_bounded(Body::from("01234567890"), 10)
            .await
            .unwrap_err();
        assert!(matches!(big, BodyError::TooLarge { max: 10 }), "{big}");
    }
}
