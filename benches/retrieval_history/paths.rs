//! The benchmark's languages and what kind of file a repository path is: promptd's own
//! [`FileKind`] judgement, plus each repository's known vendored or generated prefixes. Gold
//! files are source of one of the languages; the failure report counts the kinds that crowd
//! a ranking.

pub use promptd::rag::kind::FileKind;

/// A language whose files can be a case's gold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Python,
    TypeScript,
    JavaScript,
    Go,
    Rust,
    Java,
}

impl Lang {
    pub fn label(self) -> &'static str {
        match self {
            Lang::Python => "Python",
            Lang::TypeScript => "TypeScript",
            Lang::JavaScript => "JavaScript",
            Lang::Go => "Go",
            Lang::Rust => "Rust",
            Lang::Java => "Java",
        }
    }

    fn extensions(self) -> &'static [&'static str] {
        match self {
            Lang::Python => &["py"],
            Lang::TypeScript => &["ts", "tsx", "mts", "cts"],
            Lang::JavaScript => &["js", "jsx", "mjs", "cjs"],
            Lang::Go => &["go"],
            Lang::Rust => &["rs"],
            Lang::Java => &["java"],
        }
    }

    /// Whether `path` has one of the language's extensions.
    pub fn owns(self, path: &str) -> bool {
        extension(path).is_some_and(|e| self.extensions().contains(&e))
    }
}

fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.')
        .map(|(_, ext)| ext)
        .filter(|_| !name.starts_with('.') || name.matches('.').count() > 1)
}

/// The kind of `path` as promptd's ranking judges it, except that `foreign` lists
/// repository-specific vendored or generated prefixes the path alone does not reveal.
pub fn classify(path: &str, foreign: &[&str]) -> FileKind {
    if foreign.iter().any(|p| path.starts_with(p)) {
        FileKind::Vendored
    } else {
        FileKind::of(path)
    }
}

/// Whether `path` is source code of one of `langs` (a possible gold file).
pub fn is_source(path: &str, langs: &[Lang], foreign: &[&str]) -> bool {
    langs.iter().any(|l| l.owns(path)) && classify(path, foreign) == FileKind::Source
}
