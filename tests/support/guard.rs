//! The secret guard's test support: fake secrets generated at run time from specs, the two
//! corpora read from data (`tests/fixtures/guard/corpus/`), and where the gitleaks binary is.
//!
//! No fake secret is written literally in the repository: a spec assembles it from parts (a
//! prefix written in two, a body drawn from a seeded generator), so a secret scanner that reads
//! the repository has nothing to flag, while the tests see format-valid values.
//!
//! # Specs
//!
//! A spec is parts joined by `|` (nesting inside parentheses and brackets does not split):
//! - `%<class><n>`: `n` characters drawn from a class: `a` alphanumeric, `A` letters, `h` hex,
//!   `d` digits, `U` upper case and digits, `L` lower case and digits, `b` base64, `w` base64url,
//!   `B` base32; `%[<alphabet>]<n>` draws from the alphabet as written (`A-Z`, `a-z`, `0-9`
//!   ranges expand in place). `n` may be `<base>+<step>i`: `base + step * i` in round `i`;
//! - `%g`: a UUID (version 4); `%%`: a literal `%`;
//! - `b64(spec)`, `b64url(spec)`, `hex(spec)`, `percent(spec)`: the spec's value encoded (standard
//!   base64 with padding, base64url without, lower-case hex, percent-encoding of every byte that
//!   is not alphanumeric);
//! - `lines(w,spec)`, `escaped_lines(w,spec)`: the value cut into lines of `w` characters, joined
//!   by a newline or by the two characters `\n` (as in a JSON string);
//! - anything else is literal.
//!
//! # Corpus files
//!
//! `seed` starts the generator for the positives; the negatives continue with it, or start
//! over from `negative_seed`. Items come in this order:
//! - every `families` entry `[rule, var, spec]` in every `family_contexts` entry
//!   `[context, text]`, named `<rule>/<var>/<context>`; then every `vendors` entry `[var, spec]`
//!   in every `vendor_contexts` entry, named `vendor/<var>/<context>`, found by
//!   `vendor-api-credential`. In a context's text `{N}` is the variable, `{n}` it in lower case,
//!   `{s}` the token;
//! - the `[[positive]]` items;
//! - (negatives) two `placeholders` per family and vendor variable, as `{N}=<p>` and `{n}: <q>`,
//!   then each family's spec filled with `x` as `<var>=<filler>`;
//! - the `[[negative]]` items.
//!
//! An item has a `name`, a `text`, `draws` (specs drawn in order, written as `{1}`, `{2}`, … in
//! the text) and, for a positive, the `rule` that must find it and the `secret` spec (drawn
//! first, written as `{s}`). Consecutive items with the same `repeat = n` are generated round by
//! round, for `i` in `0..n` (`{i}` in the name and text).

use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use promptd::guard::ScanInput;
use serde::Deserialize;

/// One corpus text: a positive carries the rule id promptd must report and the fake secret
/// itself (the span a finding must cover, which must never appear in any output); a negative
/// carries neither.
#[derive(Debug, Clone)]
pub struct CorpusItem {
    pub name: String,
    pub text: String,
    pub expect: Option<String>,
    pub secret: Option<String>,
}

impl CorpusItem {
    pub fn is_positive(&self) -> bool {
        self.expect.is_some()
    }
}

/// The corpus of the built-in rules: positives for every required kind, in the contexts a
/// secret is pasted from, and at least as many look-alike negatives.
pub fn corpus() -> Vec<CorpusItem> {
    generate(include_str!("../fixtures/guard/corpus/main.toml"))
}

/// The coverage corpus: several hundred positives across every rule family, and realistic
/// non-secrets.
pub fn coverage() -> Vec<CorpusItem> {
    generate(include_str!("../fixtures/guard/corpus/coverage.toml"))
}

/// The items as scanner inputs, labelled with their names.
pub fn scan_inputs<'a>(items: impl IntoIterator<Item = &'a CorpusItem>) -> Vec<ScanInput<'a>> {
    items
        .into_iter()
        .map(|i| ScanInput::new(i.name.clone(), i.text.as_str()))
        .collect()
}

/// Every kind the built-in rules must cover (the issue's list), by rule id.
pub const REQUIRED_KINDS: &[&str] = &[
    "aws-access-key-id",
    "aws-secret-access-key",
    "github-pat",
    "github-fine-grained-pat",
    "github-oauth-token",
    "github-app-token",
    "gitlab-pat",
    "slack-bot-token",
    "slack-user-token",
    "slack-app-token",
    "slack-webhook-url",
    "stripe-secret-key",
    "openai-api-key",
    "anthropic-api-key",
    "google-api-key",
    "gcp-service-account-key",
    "azure-storage-connection-string",
    "azure-sas-token",
    "twilio-api-key",
    "twilio-auth-token",
    "sendgrid-api-key",
    "npm-access-token",
    "pypi-upload-token",
    "dockerhub-pat",
    "discord-bot-token",
    "jwt",
    "private-key",
    "openssh-private-key",
    "database-url-password",
    "authorization-header",
    "generic-password",
    "generic-secret",
];

/// Fake secrets by kind, for tests that need one value and for fixtures that write
/// `{{fake:<kind>}}` in their input.
const FAKE_KINDS: &[(&str, &str)] = &[
    ("github-pat", "gh|p_|%a36"),
    ("stripe-secret-key", "sk_|live_|%a24"),
    ("aws-access-key-id", "AK|IA|%B16"),
    ("acme", "acme_|%h32"),
    ("password", "%a8|!|%d2"),
    (
        "jwt",
        r#"b64url({"alg":"HS256","typ":"JWT"})|.|b64url({"sub":"user-|%d4|","iat":1700000000})|.|%w43"#,
    ),
    ("random", "%a22"),
    // Low-entropy values that only a fixture's own allowlist lets through.
    ("hunter", "hunter|%d1|hunter|%d1"),
    ("ci-only", "ci-only-|%d6"),
];

/// A fake secret of `kind` (see [`FAKE_KINDS`]), or `None` for an unknown kind.
pub fn fake_secret(kind: &str, g: &mut Fake) -> Option<String> {
    let (_, spec) = FAKE_KINDS.iter().find(|(k, _)| *k == kind)?;
    Some(g.token(spec))
}

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const DIGITS: &str = "0123456789";

/// Deterministic generator (splitmix64), so every run builds the same values.
pub struct Fake {
    state: u64,
}

impl Fake {
    pub fn new(seed: u64) -> Fake {
        Fake { state: seed }
    }

    /// A value from its spec (see the module doc).
    pub fn token(&mut self, spec: &str) -> String {
        self.token_in_round(spec, 0)
    }

    fn token_in_round(&mut self, spec: &str, round: usize) -> String {
        split_parts(spec)
            .into_iter()
            .map(|part| match Part::parse(part) {
                Part::Literal(s) => s.to_string(),
                Part::Draw(alphabet, count) => self.pick(&alphabet, count.at(round)),
                Part::Uuid => self.uuid(),
                Part::Call(f, arg) => self.call(f, arg, round),
            })
            .collect()
    }

    fn call(&mut self, f: &str, arg: &str, round: usize) -> String {
        match f {
            "b64" => STANDARD.encode(self.token_in_round(arg, round)),
            "b64url" => URL_SAFE_NO_PAD.encode(self.token_in_round(arg, round)),
            "hex" => hex::encode(self.token_in_round(arg, round)),
            "percent" => percent_encoding::utf8_percent_encode(
                &self.token_in_round(arg, round),
                percent_encoding::NON_ALPHANUMERIC,
            )
            .to_string(),
            "lines" | "escaped_lines" => {
                let (width, spec) = arg
                    .split_once(',')
                    .unwrap_or_else(|| panic!("{f}({arg}): width and spec"));
                let width: usize = width.trim().parse().expect("line width");
                let body = self.token_in_round(spec.trim_start(), round);
                let lines: Vec<&str> = body
                    .as_bytes()
                    .chunks(width)
                    .map(|c| std::str::from_utf8(c).expect("ASCII body"))
                    .collect();
                lines.join(if f == "lines" { "\n" } else { "\\n" })
            }
            other => panic!("unknown function {other}() in a spec"),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `n` characters drawn from `alphabet`, always containing a digit when the alphabet has one
    /// (real tokens of these lengths virtually always do), and never a filler run of `xxx`.
    fn pick(&mut self, alphabet: &[char], n: usize) -> String {
        let needs_digit = n >= 8 && alphabet.iter().any(char::is_ascii_digit);
        loop {
            let s: String = (0..n)
                .map(|_| alphabet[(self.next_u64() % alphabet.len() as u64) as usize])
                .collect();
            let filler = s.to_ascii_lowercase().contains("xxx");
            if (!needs_digit || s.chars().any(|c| c.is_ascii_digit())) && !filler {
                return s;
            }
        }
    }

    fn uuid(&mut self) -> String {
        let hex: Vec<char> = "0123456789abcdef".chars().collect();
        let [a, b, c, d, e] = [8, 4, 3, 3, 12].map(|n| self.pick(&hex, n));
        format!("{a}-{b}-4{c}-a{d}-{e}")
    }
}

/// One part of a spec.
enum Part<'a> {
    Literal(std::borrow::Cow<'a, str>),
    Draw(Vec<char>, Count),
    Uuid,
    Call(&'a str, &'a str),
}

/// How many characters a draw takes: `base + step * round`.
struct Count {
    base: usize,
    step: usize,
}

impl Count {
    fn parse(s: &str) -> Count {
        let number = |n: &str| n.parse().unwrap_or_else(|_| panic!("count {s:?}"));
        match s.split_once('+') {
            Some((base, step)) => Count {
                base: number(base),
                step: number(step.strip_suffix('i').expect("a step ends with i")),
            },
            None => Count {
                base: number(s),
                step: 0,
            },
        }
    }

    fn at(&self, round: usize) -> usize {
        self.base + self.step * round
    }
}

impl<'a> Part<'a> {
    fn parse(part: &'a str) -> Part<'a> {
        if let Some(rest) = part.strip_prefix("%%") {
            return Part::Literal(format!("%{rest}").into());
        }
        if part == "%g" {
            return Part::Uuid;
        }
        if let Some(class) = part.strip_prefix('%') {
            let (alphabet, count) = match class.strip_prefix('[') {
                Some(rest) => {
                    let (set, count) = rest.split_once(']').expect("closing ] of an alphabet");
                    (expand_alphabet(set), count)
                }
                None => {
                    let (c, count) = class.split_at(1);
                    (class_alphabet(c), count)
                }
            };
            return Part::Draw(alphabet, Count::parse(count));
        }
        if let Some((name, rest)) = part.split_once('(')
            && let Some(arg) = rest.strip_suffix(')')
            && !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Part::Call(name, arg);
        }
        Part::Literal(part.into())
    }
}

fn class_alphabet(class: &str) -> Vec<char> {
    let set = match class {
        "a" => format!("{UPPER}{LOWER}{DIGITS}"),
        "A" => format!("{UPPER}{LOWER}"),
        "h" => "0123456789abcdef".to_string(),
        "d" => DIGITS.to_string(),
        "U" => format!("{UPPER}{DIGITS}"),
        "L" => format!("{LOWER}{DIGITS}"),
        "b" => format!("{UPPER}{LOWER}{DIGITS}+/"),
        "w" => format!("{UPPER}{LOWER}{DIGITS}-_"),
        "B" => format!("{UPPER}234567"),
        other => panic!("unknown class %{other}"),
    };
    set.chars().collect()
}

/// An alphabet as written, with `x-y` ranges of letters or digits expanded in place.
fn expand_alphabet(set: &str) -> Vec<char> {
    let chars: Vec<char> = set.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match chars.get(i + 1..i + 3) {
            Some(&['-', end]) if c.is_ascii_alphanumeric() && end.is_ascii_alphanumeric() => {
                out.extend(c..=end);
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Splits a spec at the `|` outside parentheses and brackets.
fn split_parts(spec: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in spec.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.checked_sub(1).expect("balanced spec"),
            '|' if depth == 0 => {
                parts.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    assert_eq!(depth, 0, "unbalanced spec {spec:?}");
    parts.push(&spec[start..]);
    parts
}

/// A corpus file (see the module doc).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    seed: u64,
    negative_seed: Option<u64>,
    #[serde(default)]
    families: Vec<(String, String, String)>,
    #[serde(default)]
    family_contexts: Vec<(String, String)>,
    #[serde(default)]
    vendors: Vec<(String, String)>,
    #[serde(default)]
    vendor_contexts: Vec<(String, String)>,
    #[serde(default)]
    placeholders: Vec<String>,
    #[serde(default)]
    positive: Vec<ItemSpec>,
    #[serde(default)]
    negative: Vec<ItemSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemSpec {
    name: String,
    rule: Option<String>,
    secret: Option<String>,
    #[serde(default)]
    draws: Vec<String>,
    repeat: Option<usize>,
    text: String,
}

/// The rule that finds the vendors' credentials.
const VENDOR_RULE: &str = "vendor-api-credential";

fn generate(data: &str) -> Vec<CorpusItem> {
    let file: CorpusFile = toml::from_str(data).unwrap_or_else(|e| panic!("corpus file: {e}"));
    let mut g = Fake::new(file.seed);
    let mut items = Vec::new();
    // (name prefix, rule, variable, spec, contexts)
    let families = file.families.iter().map(|(rule, var, spec)| {
        (
            rule.as_str(),
            rule.as_str(),
            var,
            spec,
            &file.family_contexts,
        )
    });
    let vendors = file
        .vendors
        .iter()
        .map(|(var, spec)| ("vendor", VENDOR_RULE, var, spec, &file.vendor_contexts));
    for (prefix, rule, var, spec, contexts) in families.chain(vendors) {
        for (context, text) in contexts {
            let name = format!("{prefix}/{var}/{context}");
            items.push(positive(name, rule, g.token(spec), text, var));
        }
    }
    generate_items(&mut g, &file.positive, &mut items);

    if let Some(seed) = file.negative_seed {
        g = Fake::new(seed);
    }
    let vars = file.families.iter().map(|(_, var, _)| var);
    let vars = vars.chain(file.vendors.iter().map(|(var, _)| var));
    let placeholders = &file.placeholders;
    for (i, var) in vars.enumerate().filter(|_| !placeholders.is_empty()) {
        let p = &placeholders[i % placeholders.len()];
        let q = &placeholders[(i + 3) % placeholders.len()];
        let env = fill(&format!("{{N}}={p}\n"), var, "");
        items.push(negative(format!("placeholder/{var}/env"), env));
        let yaml = fill(&format!("{{n}}: {q}\n"), var, "");
        items.push(negative(format!("placeholder/{var}/yaml"), yaml));
    }
    // Token shapes filled with x: what documentation shows.
    for (rule, var, spec) in &file.families {
        let filler: String = split_parts(spec)
            .into_iter()
            .map(|part| match Part::parse(part) {
                Part::Literal(s) => s.into_owned(),
                Part::Draw(_, count) => "x".repeat(count.at(0)),
                Part::Uuid => "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".to_string(),
                Part::Call(f, _) => panic!("{var}: no filler for {f}()"),
            })
            .collect();
        items.push(negative(
            format!("filler/{rule}/{var}"),
            format!("{var}={filler}\n"),
        ));
    }
    generate_items(&mut g, &file.negative, &mut items);
    items
}

/// The hand-written items, consecutive ones with the same `repeat` round by round.
fn generate_items(g: &mut Fake, specs: &[ItemSpec], out: &mut Vec<CorpusItem>) {
    for group in specs.chunk_by(|a, b| a.repeat == b.repeat) {
        for round in 0..group[0].repeat.unwrap_or(1) {
            for spec in group {
                out.push(spec.generate(g, round));
            }
        }
    }
}

impl ItemSpec {
    fn generate(&self, g: &mut Fake, round: usize) -> CorpusItem {
        assert_eq!(
            self.rule.is_some(),
            self.secret.is_some(),
            "{}: a positive has a rule and a secret, a negative neither",
            self.name
        );
        let secret = self.secret.as_ref().map(|s| g.token_in_round(s, round));
        let mut text = self.text.clone();
        for (n, spec) in self.draws.iter().enumerate() {
            text = text.replace(&format!("{{{}}}", n + 1), &g.token_in_round(spec, round));
        }
        let mut name = self.name.clone();
        if self.repeat.is_some() {
            name = name.replace("{i}", &round.to_string());
            text = text.replace("{i}", &round.to_string());
        }
        match (&self.rule, secret) {
            (Some(rule), Some(s)) => positive(name, rule, s, &text, ""),
            _ => negative(name, text),
        }
    }
}

/// `template` with `{N}` the variable, `{n}` it in lower case and `{s}` the secret.
fn fill(template: &str, var: &str, secret: &str) -> String {
    template
        .replace("{N}", var)
        .replace("{n}", &var.to_lowercase())
        .replace("{s}", secret)
}

fn positive(name: String, rule: &str, secret: String, template: &str, var: &str) -> CorpusItem {
    let text = fill(template, var, &secret);
    assert!(
        text.contains(&secret),
        "{name}: the text must carry the secret"
    );
    CorpusItem {
        name,
        text,
        expect: Some(rule.to_string()),
        secret: Some(secret),
    }
}

fn negative(name: String, text: String) -> CorpusItem {
    CorpusItem {
        name,
        text,
        expect: None,
        secret: None,
    }
}

/// One line of `size` bytes, no newline: every corpus text (secrets and look-alikes) with its
/// newlines turned to spaces, over and over; a finding every few hundred bytes.
pub fn one_line(size: usize) -> String {
    let items: Vec<String> = corpus()
        .into_iter()
        .map(|i| i.text.replace(['\n', '\r'], " "))
        .collect();
    let mut s = String::with_capacity(size + 4096);
    'fill: loop {
        for item in &items {
            s.push_str(item);
            s.push(' ');
            if s.len() >= size {
                break 'fill;
            }
        }
    }
    s.truncate(s.floor_char_boundary(size));
    s
}

/// `<manifest>/.deps/gitleaks/gitleaks`, or `$GITLEAKS_BIN`.
pub fn gitleaks_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GITLEAKS_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".deps/gitleaks/gitleaks");
    p.is_file().then_some(p)
}

/// The gitleaks binary, or a panic telling how to install it.
pub fn require_gitleaks() -> PathBuf {
    match gitleaks_bin() {
        Some(p) if p.is_file() => p,
        other => panic!(
            "gitleaks binary not found ({other:?}): run scripts/setup-gitleaks (or set GITLEAKS_BIN)"
        ),
    }
}
