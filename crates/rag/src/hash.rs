//! Content hashes: 128-bit BLAKE3 digests that fingerprint indexed files and key chunk vectors
//! (a chunk's key is the hash of its tags line and text, so vectors survive a file's other edits
//! and follow a chunk that moves).

/// A 128-bit content hash (BLAKE3, truncated).
pub type ContentHash = [u8; 16];

pub fn content_hash(bytes: &[u8]) -> ContentHash {
    let full = blake3::hash(bytes);
    let mut out = [0u8; 16];
    out.copy_from_slice(&full.as_bytes()[..16]);
    out
}

/// [`content_hash`] of [`super::chunk::tagged_text`] without building that string (a copy of
/// every indexed byte otherwise).
pub fn tagged_hash(tags: &[String], text: &str) -> ContentHash {
    let mut hasher = blake3::Hasher::new();
    if !tags.is_empty() {
        for (i, tag) in tags.iter().enumerate() {
            if i > 0 {
                hasher.update(b" ");
            }
            hasher.update(tag.as_bytes());
        }
        hasher.update(b"\n");
    }
    hasher.update(text.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::tagged_text;

    #[test]
    fn tagged_hash_equals_hash_of_tagged_text() {
        let cases: [Vec<String>; 3] = [
            vec![],
            vec!["[Function: a]".into()],
            vec!["[A: b]".into(), "[C: d]".into()],
        ];
        for tags in cases {
            let text = "fn a() {}\n";
            assert_eq!(
                tagged_hash(&tags, text),
                content_hash(tagged_text(&tags, text).as_bytes())
            );
        }
    }
}
