//! Cursor commands (`.cursor/commands/*.md`): no arguments and no substitution; the body is
//! served as written.

use super::segment::Segment;

/// The whole body is text.
pub fn segments(body: &str) -> Vec<Segment<'_>> {
    if body.is_empty() {
        Vec::new()
    } else {
        vec![Segment::Text(body)]
    }
}
