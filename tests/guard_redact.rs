//! The redact policy: `[REDACTED:<rule-id>#n]` placeholders, numbered per distinct secret,
//! merged where findings overlap, and nothing else in the text touched.

use crate::support::guard;

use guard::{Fake, fake_secret};
use promptd::guard::{Guard, GuardOptions, Policy, ScanInput};

fn scan_and_redact(guard: &Guard, text: &str) -> String {
    let input = ScanInput::new("t", text);
    let report = guard.scan(std::slice::from_ref(&input)).unwrap();
    guard.redact_input(&input, &report)
}

#[test]
fn the_same_secret_gets_the_same_number_and_others_the_next() {
    let guard = Guard::builtin().unwrap();
    let mut g = Fake::new(1);
    let a = fake_secret("github-pat", &mut g).unwrap();
    let b = fake_secret("github-pat", &mut g).unwrap();
    let key = fake_secret("aws-access-key-id", &mut g).unwrap();
    let text = format!("one={a}\ntwo={b}\nagain={a}\naws={key}\n");
    assert_eq!(
        scan_and_redact(&guard, &text),
        "one=[REDACTED:github-pat#1]\ntwo=[REDACTED:github-pat#2]\nagain=[REDACTED:github-pat#1]\naws=[REDACTED:aws-access-key-id#1]\n"
    );
}

#[test]
fn two_rules_on_one_token_give_one_finding_and_one_placeholder() {
    let guard = Guard::builtin().unwrap();
    let mut g = Fake::new(2);
    let jwt = fake_secret("jwt", &mut g).unwrap();
    // Both the Authorization-header rule and the JWT rule match the same token: one finding per
    // span (the earlier rule of the set); a user's gitleaks run may still report its own.
    let text = format!("GET / HTTP/1.1\nAuthorization: Bearer {jwt}\n\n");
    let input = ScanInput::new("t", text.as_str());
    let report = guard.scan(std::slice::from_ref(&input)).unwrap();
    let rules: Vec<&str> = report.findings.iter().map(|f| f.rule_id.as_str()).collect();
    assert_eq!(rules, vec!["jwt"]);
    let redacted = guard.redact_input(&input, &report);
    assert_eq!(redacted.matches("[REDACTED:").count(), 1, "{redacted}");
    assert!(!redacted.contains(&jwt));
    assert!(redacted.starts_with("GET / HTTP/1.1\nAuthorization: Bearer [REDACTED:"));
}

#[test]
fn text_around_secrets_is_kept_byte_for_byte() {
    let guard = Guard::builtin().unwrap();
    let mut g = Fake::new(3);
    let token = fake_secret("stripe-secret-key", &mut g).unwrap();
    let text = format!("Grüße — ключ: «{token}» ✓\n\ttrailing  \r\n");
    assert_eq!(
        scan_and_redact(&guard, &text),
        "Grüße — ключ: «[REDACTED:stripe-secret-key#1]» ✓\n\ttrailing  \r\n"
    );
}

#[test]
fn a_clean_text_is_returned_unchanged() {
    let guard = Guard::builtin().unwrap();
    let text = "fn main() {\n    println!(\"hello\");\n}\n";
    assert_eq!(scan_and_redact(&guard, text), text);
    assert_eq!(guard.redact(text, &[]), text);
}

#[test]
fn a_multi_line_private_key_is_redacted_whole() {
    let guard = Guard::builtin().unwrap();
    let mut g = Fake::new(4);
    let body: Vec<String> = (0..6).map(|_| g.token("%b64")).collect();
    let begin = g.token("-----BEGIN RSA PRIVATE| KEY-----");
    let end = g.token("-----END RSA PRIVATE| KEY-----");
    let text = format!("key:\n{begin}\n{}\n{end}\nafter\n", body.join("\n"));
    let input = ScanInput::new("t", text.as_str());
    let report = guard.scan(std::slice::from_ref(&input)).unwrap();
    assert_eq!(report.findings.len(), 1);
    let f = &report.findings[0];
    assert_eq!((f.line, f.end_line), (2, 8));
    assert_eq!(
        guard.redact_input(&input, &report),
        format!("key:\n[REDACTED:private-key#1]\n{end}\nafter\n")
    );
}

#[test]
fn the_policy_is_carried_by_the_guard() {
    assert_eq!(Guard::builtin().unwrap().policy(), Policy::Block);
    let guard = Guard::new(GuardOptions {
        policy: Policy::Redact,
        ..GuardOptions::default()
    })
    .unwrap();
    assert_eq!(guard.policy(), Policy::Redact);
}
