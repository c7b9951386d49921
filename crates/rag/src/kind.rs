//! What kind of file a repository path is, judged from the path alone: source code, test or
//! benchmark code, prose documentation, changelog, vendored or generated code, or anything else
//! (configuration, data). Ranking uses it to put source code first for a request about
//! behaviour; a request that names a kind ("the test for…", "the docs") keeps that kind level
//! with source ([`KindsAsked`]).

use serde::Serialize;

/// The kind of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    Source,
    Test,
    Docs,
    Changelog,
    Vendored,
    Generated,
    Other,
}

impl FileKind {
    pub const ALL: [FileKind; 7] = [
        FileKind::Source,
        FileKind::Test,
        FileKind::Docs,
        FileKind::Changelog,
        FileKind::Vendored,
        FileKind::Generated,
        FileKind::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            FileKind::Source => "source",
            FileKind::Test => "test/bench",
            FileKind::Docs => "docs",
            FileKind::Changelog => "changelog",
            FileKind::Vendored => "vendored",
            FileKind::Generated => "generated",
            FileKind::Other => "other",
        }
    }

    /// Prose for people rather than code: documentation and changelogs.
    pub fn is_prose(self) -> bool {
        matches!(self, FileKind::Docs | FileKind::Changelog)
    }

    /// The kind of `path` (relative, `/`-separated).
    pub fn of(path: &str) -> FileKind {
        classify(path)
    }
}

const CODE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "go", "rs", "c", "h", "cc",
    "cpp", "cxx", "hpp", "hh", "java", "kt", "kts", "scala", "rb", "php", "cs", "swift", "m", "mm",
    "sh", "bash", "zsh", "fish", "ps1", "lua", "ex", "exs", "erl", "hs", "ml", "clj", "dart",
    "zig", "vue", "svelte",
];
const PROSE_EXTENSIONS: &[&str] = &[
    "md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "org", "textile", "html", "htm",
    "1", "5",
];
/// File names (lower-case, extension dropped) of prose without a prose extension.
const PROSE_NAMES: &[&str] = &[
    "readme",
    "license",
    "licence",
    "copying",
    "authors",
    "contributors",
    "contributing",
    "notice",
    "code_of_conduct",
    "security",
];
const CHANGELOG_NAMES: &[&str] = &[
    "changelog",
    "changes",
    "history",
    "news",
    "release-notes",
    "release_notes",
    "releasenotes",
];
const VENDOR_DIRS: &[&str] = &[
    "vendor",
    "vendored",
    "_vendor",
    "third_party",
    "third-party",
    "thirdparty",
    "node_modules",
    "bower_components",
    "extern",
    "site-packages",
];
const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "__tests__",
    "__mocks__",
    "testdata",
    "test_data",
    "fixtures",
    "e2e",
    "spec",
    "specs",
    "bench",
    "benches",
    "benchmark",
    "benchmarks",
    "benchsuite",
];
const DOC_DIRS: &[&str] = &["doc", "docs", "site", "website", "man"];
const GENERATED_DIRS: &[&str] = &["generated", "dist", "build", "target"];

fn extension(name: &str) -> Option<&str> {
    name.rsplit_once('.')
        .map(|(_, ext)| ext)
        .filter(|_| !name.starts_with('.') || name.matches('.').count() > 1)
}

/// Whether `path` is prose by its name alone (a prose extension, `README`, `LICENSE`, a
/// changelog), whatever folder it is in: such a file is never taken as the active file.
pub fn is_prose_file(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let stem = name.split('.').next().unwrap_or(name);
    let ext = extension(name);
    if ext.is_some_and(|e| CODE_EXTENSIONS.contains(&e)) {
        return false;
    }
    ext.is_some_and(|e| PROSE_EXTENSIONS.contains(&e))
        || PROSE_NAMES.contains(&stem)
        || CHANGELOG_NAMES.contains(&stem)
}

fn classify(path: &str) -> FileKind {
    let lower = path.to_ascii_lowercase();
    let (dirs, name) = match lower.rsplit_once('/') {
        Some((dirs, name)) => (dirs.split('/').collect::<Vec<_>>(), name),
        None => (Vec::new(), lower.as_str()),
    };
    let ext = extension(name);
    // A `packages/` folder inside a package holds copies of other projects
    // (`requests/packages/urllib3/`); at the top it is a monorepo's own (`packages/core/`).
    if dirs.iter().any(|d| VENDOR_DIRS.contains(d)) || dirs.iter().skip(1).any(|d| *d == "packages")
    {
        return FileKind::Vendored;
    }
    if name.contains(".generated.")
        || name.contains("_generated")
        || name.starts_with("zz_generated")
        || name.ends_with(".pb.go")
        || name.ends_with("_pb2.py")
        || name.ends_with(".min.js")
        || dirs
            .iter()
            .any(|d| GENERATED_DIRS.contains(d) || d.ends_with("_dist") || d.ends_with("-dist"))
    {
        return FileKind::Generated;
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
        || name.ends_with("_spec.rb")
        || [".test.", ".spec."].iter().any(|m| name.contains(m));
    if test_dir || test_name {
        return FileKind::Test;
    }
    let stem = name.split('.').next().unwrap_or(name);
    let code = ext.is_some_and(|e| CODE_EXTENSIONS.contains(&e));
    if CHANGELOG_NAMES.contains(&stem) && !code {
        return FileKind::Changelog;
    }
    // Code under a top-level `docs/` is the documentation's own (Sphinx `conf.py`, examples);
    // a `doc/` package elsewhere is often source (cobra's `doc/`, a crate's `flags/doc/`).
    let doc_dir = dirs.iter().any(|d| DOC_DIRS.contains(d));
    if ext.is_some_and(|e| PROSE_EXTENSIONS.contains(&e))
        || (PROSE_NAMES.contains(&stem) && !code)
        || (doc_dir && !code)
        || (code && dirs.first() == Some(&"docs"))
    {
        return FileKind::Docs;
    }
    if code {
        FileKind::Source
    } else {
        FileKind::Other
    }
}

/// The kinds a request asks about by name, which ranking then keeps level with source code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KindsAsked {
    pub tests: bool,
    pub docs: bool,
    pub changelog: bool,
}

impl KindsAsked {
    /// Reads the kinds named among a request's lower-cased words.
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> KindsAsked {
        let mut asked = KindsAsked::default();
        for w in words {
            match w {
                "test" | "tests" | "testing" | "tested" | "spec" | "specs" | "unittest"
                | "pytest" | "benchmark" | "benchmarks" | "bench" | "fixture" | "fixtures"
                | "coverage" => asked.tests = true,
                "doc" | "docs" | "documentation" | "document" | "documented" | "readme"
                | "tutorial" | "guide" | "manual" | "docstring" | "docstrings" => asked.docs = true,
                "changelog" | "changes" | "history" | "news" | "release" => asked.changelog = true,
                _ => {}
            }
        }
        asked
    }

    /// Whether files of `kind` were asked for.
    pub fn includes(self, kind: FileKind) -> bool {
        match kind {
            FileKind::Test => self.tests,
            FileKind::Docs => self.docs,
            FileKind::Changelog => self.changelog,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_paths() {
        let cases = [
            ("src/requests/sessions.py", FileKind::Source),
            ("tests/test_sessions.py", FileKind::Test),
            ("pkg/router_test.go", FileKind::Test),
            ("src/jsx/index.test.tsx", FileKind::Test),
            ("crates/core/tests.rs", FileKind::Test),
            ("benches/parse.rs", FileKind::Test),
            ("docs/api.rst", FileKind::Docs),
            ("docs/conf.py", FileKind::Docs),
            ("doc/md_docs.go", FileKind::Source),
            ("doc/md_docs.md", FileKind::Docs),
            ("crates/core/flags/doc/version.rs", FileKind::Source),
            ("README.md", FileKind::Docs),
            ("LICENSE", FileKind::Docs),
            ("HISTORY.rst", FileKind::Changelog),
            ("CHANGELOG.md", FileKind::Changelog),
            ("requests/_vendor/idna/core.py", FileKind::Vendored),
            (
                "requests/packages/urllib3/connectionpool.py",
                FileKind::Vendored,
            ),
            ("src/requests/packages/chardet/core.py", FileKind::Vendored),
            ("packages/core/src/index.ts", FileKind::Source),
            ("vendor/github.com/x/y.go", FileKind::Vendored),
            ("deno_dist/jsx/index.ts", FileKind::Generated),
            ("api/v1/types.pb.go", FileKind::Generated),
            ("pyproject.toml", FileKind::Other),
            ("Makefile", FileKind::Other),
            ("src/history.py", FileKind::Source),
        ];
        for (path, kind) in cases {
            assert_eq!(FileKind::of(path), kind, "{path}");
        }
    }

    #[test]
    fn prose_by_name_alone() {
        for path in [
            "README",
            "docs/guide.md",
            "CHANGELOG",
            "notes.txt",
            "COPYING",
        ] {
            assert!(is_prose_file(path), "{path}");
        }
        for path in [
            "docs/conf.py",
            "src/readme_parser.rs",
            "history.py",
            "news.go",
        ] {
            assert!(!is_prose_file(path), "{path}");
        }
    }

    #[test]
    fn asked_kinds_from_words() {
        let asked = KindsAsked::from_words("add a test for the parser".split(' '));
        assert!(asked.includes(FileKind::Test) && !asked.includes(FileKind::Docs));
        let asked = KindsAsked::from_words("fix typo in docs".split(' '));
        assert!(asked.includes(FileKind::Docs) && !asked.includes(FileKind::Test));
        assert!(!KindsAsked::from_words(["parser"]).includes(FileKind::Source));
    }
}
