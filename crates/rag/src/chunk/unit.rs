//! Units: runs of lines with the definitions they hold, what the splitters (syntax, Markdown
//! headings, the whole file) cut a file into before units are merged and windowed into chunks.

/// A run of lines with the definitions it holds (0-based rows, inclusive).
#[derive(Debug, Clone)]
pub(super) struct Unit {
    pub start: usize,
    pub end: usize,
    pub tags: Vec<String>,
    pub symbols: Vec<String>,
}

impl Unit {
    /// Lines `start..=end` (at least one) holding no definition.
    pub fn plain(start: usize, end: usize) -> Unit {
        Unit {
            start,
            end: end.max(start),
            tags: Vec::new(),
            symbols: Vec::new(),
        }
    }

    /// A file's `lines` as one unit.
    pub fn whole_file(lines: &[&str]) -> Vec<Unit> {
        vec![Unit::plain(0, lines.len().saturating_sub(1))]
    }

    /// Takes the tags and symbols of `other` this unit lacks, in their order (its lines are the
    /// caller's business).
    pub fn absorb(&mut self, other: Unit) {
        for t in other.tags {
            if !self.tags.contains(&t) {
                self.tags.push(t);
            }
        }
        for s in other.symbols {
            if !self.symbols.contains(&s) {
                self.symbols.push(s);
            }
        }
    }
}
