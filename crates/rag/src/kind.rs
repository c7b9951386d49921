//! What kind of file a repository path is, judged from the path alone: source code, test or
//! benchmark code, prose documentation, changelog, vendored or generated code, or anything else
//! (configuration, data). Ranking uses it to put source code first for a request about
//! behaviour; a request that names a kind ("the test for…", "the docs") keeps that kind level
//! with source ([`KindsAsked`]).

use std::collections::HashSet;

use serde::Serialize;

use super::chunk::{Chunk, Language};

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

/// File names (lower-case) of dependency lock files: generated by a package manager.
const LOCK_NAMES: &[&str] = &[
    "cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "composer.lock",
    "gemfile.lock",
    "go.sum",
    "flake.lock",
];

/// Lines longer than this on average, with one line longer than [`MINIFIED_LINE_BYTES`], are
/// minified or bundled code.
const MINIFIED_MEAN_LINE_BYTES: usize = 300;
const MINIFIED_LINE_BYTES: usize = 1000;

/// The kind a file's name and content say it is when its path alone does not: generated when
/// it declares so in its first lines (`// Code generated … DO NOT EDIT.`, `@generated`), is a
/// dependency lock file or is minified (very long lines). `None` otherwise.
pub fn content_kind(path: &str, text: &str) -> Option<FileKind> {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    if LOCK_NAMES.contains(&name) || super::chunk::is_generated(text) {
        return Some(FileKind::Generated);
    }
    let lines = text.lines().count().max(1);
    if text.len() / lines > MINIFIED_MEAN_LINE_BYTES
        && text.lines().any(|l| l.len() > MINIFIED_LINE_BYTES)
    {
        return Some(FileKind::Generated);
    }
    None
}

/// Whether a chunk is test code by what it declares, wherever its file is: Rust test
/// attributes (`#[test]`, `#[cfg(test)]`: a source file's test module), Go `func TestX(t
/// *testing.T)`, `@Test` (Java, Kotlin), `[Test]`/`[Fact]` (C#), or Python whose every
/// symbol is a `test_` function (a `TestReport` class is no test).
pub fn is_test_chunk(chunk: &Chunk) -> bool {
    let text = chunk.text.as_str();
    match chunk.language {
        Language::Rust => {
            text.contains("#[test]")
                || text.contains("#[cfg(test)]")
                || text.contains("#[tokio::test")
                || text.contains("#[rstest")
        }
        Language::Go => text.lines().any(|l| {
            (l.starts_with("func Test") || l.starts_with("func Benchmark"))
                && l.contains("*testing.")
        }),
        Language::Java => text.contains("@Test") || text.contains("@ParameterizedTest"),
        Language::CSharp => text.contains("[Test]") || text.contains("[Fact]"),
        Language::Python => {
            !chunk.symbols.is_empty()
                && chunk
                    .symbols
                    .iter()
                    .all(|s| s.split('.').any(|part| part.starts_with("test_")))
        }
        _ => false,
    }
}

/// Which trees of a repository hold other projects' code, read from its files: a folder with
/// its own licence file (`LICENSE`, `LICENCE`, `COPYING`, any extension) inside a folder of
/// the project's code (`requests/packages/urllib3/` beside `requests/packages/__init__.py`) is a
/// vendored copy. A top-level folder with a licence (a workspace member such as
/// `tracing-core/`) and a member of a folder without code of its own (`packages/core/` of a
/// monorepo) are the project's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoLayout {
    /// Vendored folders, each with a trailing `/`.
    vendored: Vec<String>,
}

impl RepoLayout {
    /// The layout of a repository whose files (relative, `/`-separated) are `paths`.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a str>) -> RepoLayout {
        let mut licensed: Vec<&str> = Vec::new();
        let mut code_dirs: HashSet<&str> = HashSet::new();
        for path in paths {
            let Some((dir, name)) = path.rsplit_once('/') else {
                continue;
            };
            let lower = name.to_ascii_lowercase();
            let stem = lower.split('.').next().unwrap_or(&lower);
            if matches!(stem, "license" | "licence" | "copying") {
                // At least two folders deep: `a/b/LICENSE`.
                if dir.contains('/') {
                    licensed.push(dir);
                }
            } else if extension(&lower).is_some_and(|e| CODE_EXTENSIONS.contains(&e)) {
                code_dirs.insert(dir);
            }
        }
        let mut vendored: Vec<String> = licensed
            .into_iter()
            .filter(|dir| {
                dir.rsplit_once('/')
                    .is_some_and(|(parent, _)| code_dirs.contains(parent))
            })
            .map(|dir| format!("{dir}/"))
            .collect();
        vendored.sort();
        vendored.dedup();
        RepoLayout { vendored }
    }

    /// The kind of `path` in this repository: vendored inside a vendored folder, else
    /// [`FileKind::of`].
    pub fn kind(&self, path: &str) -> FileKind {
        if self.vendored.iter().any(|v| path.starts_with(v.as_str())) {
            FileKind::Vendored
        } else {
            FileKind::of(path)
        }
    }

    /// The vendored folders found, each with a trailing `/`.
    pub fn vendored(&self) -> &[String] {
        &self.vendored
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
    fn kinds_from_content() {
        assert_eq!(
            content_kind(
                "api/x.go",
                "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n"
            ),
            Some(FileKind::Generated)
        );
        assert_eq!(
            content_kind("Cargo.lock", "version = 3\n"),
            Some(FileKind::Generated)
        );
        let minified = format!("var a={};\n", "x".repeat(2000));
        assert_eq!(
            content_kind("static/app.js", &minified),
            Some(FileKind::Generated)
        );
        assert_eq!(
            content_kind(
                "src/gen.rs",
                "//! Code generated by the macro is checked here.\nfn f() {}\n"
            ),
            None
        );
        let chunk = |path: &str, text: &str, symbols: &[&str]| Chunk {
            start_line: 1,
            end_line: 1,
            language: Language::from_path(path),
            tags: Vec::new(),
            symbols: symbols.iter().map(|s| s.to_string()).collect(),
            text: text.to_string(),
        };
        assert!(is_test_chunk(&chunk(
            "src/walk.rs",
            "#[cfg(test)]\nmod tests {",
            &["tests"]
        )));
        assert!(!is_test_chunk(&chunk(
            "src/walk.rs",
            "fn walk() {}",
            &["walk"]
        )));
        assert!(is_test_chunk(&chunk(
            "x_test.go",
            "func TestWalk(t *testing.T) {",
            &["TestWalk"]
        )));
        assert!(is_test_chunk(&chunk(
            "src/a.py",
            "def test_a():",
            &["test_a"]
        )));
        assert!(!is_test_chunk(&chunk(
            "src/_pytest/reports.py",
            "class TestReport:",
            &["TestReport", "TestReport.__init__"]
        )));
    }

    #[test]
    fn vendored_trees_from_nested_licences() {
        let layout = RepoLayout::from_paths([
            "requests/__init__.py",
            "requests/packages/__init__.py",
            "requests/packages/urllib3/LICENSE.txt",
            "requests/packages/urllib3/poolmanager.py",
            "tracing-core/LICENSE",
            "tracing-core/src/lib.rs",
            "packages/core/LICENSE",
            "packages/core/src/index.ts",
            "LICENSE",
        ]);
        assert_eq!(layout.vendored(), ["requests/packages/urllib3/"]);
        assert_eq!(
            layout.kind("requests/packages/urllib3/poolmanager.py"),
            FileKind::Vendored
        );
        assert_eq!(layout.kind("tracing-core/src/lib.rs"), FileKind::Source);
        assert_eq!(layout.kind("packages/core/src/index.ts"), FileKind::Source);
        assert_eq!(layout.kind("requests/__init__.py"), FileKind::Source);
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
