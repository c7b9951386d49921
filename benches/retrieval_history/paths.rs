//! What kind of file a repository path is, judged from the path alone: source code of one of
//! the benchmark's languages, test or benchmark code, prose documentation, changelog,
//! vendored or generated code, or anything else (configuration, data). Gold files are
//! source; the failure report counts the kinds that crowd a ranking.

use serde::Serialize;

/// A language whose files can be a case's gold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Python,
    TypeScript,
    Go,
    Rust,
}

impl Lang {
    pub fn label(self) -> &'static str {
        match self {
            Lang::Python => "Python",
            Lang::TypeScript => "TypeScript",
            Lang::Go => "Go",
            Lang::Rust => "Rust",
        }
    }

    fn extensions(self) -> &'static [&'static str] {
        match self {
            Lang::Python => &["py"],
            Lang::TypeScript => &["ts", "tsx", "mts", "cts"],
            Lang::Go => &["go"],
            Lang::Rust => &["rs"],
        }
    }

    /// Whether `path` has one of the language's extensions.
    pub fn owns(self, path: &str) -> bool {
        extension(path).is_some_and(|e| self.extensions().contains(&e))
    }
}

/// The kind of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Source,
    Test,
    Docs,
    Changelog,
    Vendored,
    Generated,
    Other,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Source,
        Kind::Test,
        Kind::Docs,
        Kind::Changelog,
        Kind::Vendored,
        Kind::Generated,
        Kind::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Source => "source",
            Kind::Test => "test/bench",
            Kind::Docs => "docs",
            Kind::Changelog => "changelog",
            Kind::Vendored => "vendored",
            Kind::Generated => "generated",
            Kind::Other => "other",
        }
    }
}

const CODE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "go", "rs", "c", "h", "cc",
    "cpp", "hpp", "java", "kt", "rb", "php", "cs", "swift", "sh", "bash", "zsh", "fish", "ps1",
];
const PROSE_EXTENSIONS: &[&str] = &["md", "mdx", "rst", "txt", "adoc", "html", "htm", "1", "5"];
const VENDOR_DIRS: &[&str] = &[
    "vendor",
    "vendored",
    "_vendor",
    "third_party",
    "third-party",
    "thirdparty",
    "node_modules",
    "extern",
];
const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "__tests__",
    "testdata",
    "test_data",
    "fixtures",
    "e2e",
    "bench",
    "benches",
    "benchmark",
    "benchmarks",
    "benchsuite",
    "perf-measures",
];
const DOC_DIRS: &[&str] = &["docs", "site", "website"];

fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.')
        .map(|(_, ext)| ext)
        .filter(|_| !name.starts_with('.') || name.matches('.').count() > 1)
}

/// The kind of `path`; `foreign` lists repository-specific vendored or generated prefixes.
pub fn classify(path: &str, foreign: &[&str]) -> Kind {
    let lower = path.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('/').collect();
    let (dirs, name) = parts.split_at(parts.len() - 1);
    let name = name[0];
    let ext = extension(&lower);
    if foreign.iter().any(|p| path.starts_with(p)) || dirs.iter().any(|d| VENDOR_DIRS.contains(d)) {
        return Kind::Vendored;
    }
    if name.contains(".generated.")
        || name.contains("_generated")
        || name.starts_with("zz_generated")
        || name.ends_with(".pb.go")
        || name.ends_with(".min.js")
        || dirs.iter().any(|d| *d == "generated" || *d == "dist")
    {
        return Kind::Generated;
    }
    let test_dir = dirs.iter().any(|d| {
        TEST_DIRS.contains(d)
            || d.ends_with("-tests")
            || d.ends_with("_tests")
            || d.ends_with("-test")
            || d.ends_with("_test")
    });
    let test_name = name.starts_with("test_")
        || name == "conftest.py"
        || name == "tests.rs"
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || name.ends_with("_tests.rs")
        || [".test.", ".spec.", "_spec."]
            .iter()
            .any(|m| name.contains(m));
    if test_dir || test_name {
        return Kind::Test;
    }
    let stem = name.split('.').next().unwrap_or(name);
    if [
        "changelog",
        "changes",
        "history",
        "news",
        "release-notes",
        "release_notes",
    ]
    .contains(&stem)
    {
        return Kind::Changelog;
    }
    let code = ext.is_some_and(|e| CODE_EXTENSIONS.contains(&e));
    let doc_dir = dirs.iter().any(|d| DOC_DIRS.contains(d));
    if ext.is_some_and(|e| PROSE_EXTENSIONS.contains(&e))
        || stem == "readme"
        || (doc_dir && (!code || dirs.first() == Some(&"docs")))
    {
        return Kind::Docs;
    }
    if code { Kind::Source } else { Kind::Other }
}

/// Whether `path` is source code of one of `langs` (a possible gold file).
pub fn is_source(path: &str, langs: &[Lang], foreign: &[&str]) -> bool {
    langs.iter().any(|l| l.owns(path)) && classify(path, foreign) == Kind::Source
}
