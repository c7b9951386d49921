//! Shared test support for the secret guard: a corpus of fake secrets and look-alikes, generated
//! at test time.
//!
//! No fake secret is written literally in this file: every token is assembled from parts (its
//! prefix split in two, its body drawn from a seeded generator), so a hosted secret scanner that
//! reads the repository has nothing to flag, while the test sees format-valid values.

use std::path::PathBuf;

pub mod families;

/// One corpus text: a positive carries the rule id promptd must report and the fake secret
/// itself (to check that it never appears in any output); a negative carries neither.
#[derive(Clone)]
pub struct CorpusItem {
    pub name: String,
    pub text: String,
    pub expect: Option<&'static str>,
    pub secret: Option<String>,
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

pub const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
pub const DIGITS: &str = "0123456789";
pub const HEX: &str = "0123456789abcdef";
pub const BASE32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

pub fn alnum() -> String {
    format!("{UPPER}{LOWER}{DIGITS}")
}
pub fn b64() -> String {
    format!("{UPPER}{LOWER}{DIGITS}+/")
}
pub fn b64url() -> String {
    format!("{UPPER}{LOWER}{DIGITS}-_")
}

/// Deterministic generator (splitmix64) so the corpus is the same on every run.
pub struct Fake {
    state: u64,
}

impl Fake {
    pub fn new(seed: u64) -> Fake {
        Fake { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `n` characters drawn from `alphabet`, always containing a digit when the alphabet has one
    /// (real tokens of these lengths virtually always do).
    pub fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        loop {
            let s: String = (0..n)
                .map(|_| chars[(self.next_u64() % chars.len() as u64) as usize])
                .collect();
            let needs_digit = n >= 8 && chars.iter().any(char::is_ascii_digit);
            let filler = s.to_ascii_lowercase().contains("xxx");
            if (!needs_digit || s.chars().any(|c| c.is_ascii_digit())) && !filler {
                return s;
            }
        }
    }

    pub fn uuid(&mut self) -> String {
        format!(
            "{}-{}-4{}-a{}-{}",
            self.pick(HEX, 8),
            self.pick(HEX, 4),
            self.pick(HEX, 3),
            self.pick(HEX, 3),
            self.pick(HEX, 12)
        )
    }
}

/// Standard base64 (with padding) or base64url (without), for building structured fakes.
pub fn base64(data: &[u8], url: bool) -> String {
    let alphabet: Vec<char> = if url { b64url() } else { b64() }.chars().collect();
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let emit = chunk.len() + 1;
        for i in 0..4 {
            if i < emit {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize]);
            } else if !url {
                out.push('=');
            }
        }
    }
    out
}

/// Joins parts: the way every fake prefix is written in this file.
pub fn cat(parts: &[&str]) -> String {
    parts.concat()
}

/// Fake secrets by kind, for fixtures that write `{{fake:<kind>}}` in their input.
pub fn fake_secret(kind: &str, g: &mut Fake) -> Option<String> {
    Some(match kind {
        "github-pat" => cat(&["gh", "p_", &g.pick(&alnum(), 36)]),
        "stripe-secret-key" => cat(&["sk_", "live_", &g.pick(&alnum(), 24)]),
        "aws-access-key-id" => cat(&["AK", "IA", &g.pick(BASE32, 16)]),
        "acme" => cat(&["acme_", &g.pick(HEX, 32)]),
        "password" => cat(&[&g.pick(&alnum(), 8), "!", &g.pick(DIGITS, 2)]),
        "jwt" => jwt(g),
        "random" => g.pick(&alnum(), 22),
        // Low-entropy values that only a fixture's own allowlist lets through.
        "hunter" => format!("hunter{}hunter{}", g.pick(DIGITS, 1), g.pick(DIGITS, 1)),
        "ci-only" => format!("ci-only-{}", g.pick(DIGITS, 6)),
        _ => return None,
    })
}

pub fn jwt(g: &mut Fake) -> String {
    let header = base64(br#"{"alg":"HS256","typ":"JWT"}"#, true);
    let payload = base64(
        format!(r#"{{"sub":"user-{}","iat":1700000000}}"#, g.pick(DIGITS, 4)).as_bytes(),
        true,
    );
    format!("{header}.{payload}.{}", g.pick(&b64url(), 43))
}

fn pem_body(g: &mut Fake, prefix: &str, len: usize, width: usize, sep: &str) -> String {
    let body = format!("{prefix}{}", g.pick(&b64(), len - prefix.len()));
    body.as_bytes()
        .chunks(width)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(sep)
}

fn header(kind: &str, begin: bool) -> String {
    let word = if begin { "BEGIN" } else { "END" };
    format!("-----{word} {kind}-----")
}

/// The corpus: positives (one per kind and context) and at least as many look-alike negatives.
/// A format-valid fake Slack incoming-webhook URL.
fn slack_webhook(g: &mut Fake) -> String {
    cat(&[
        "https://hooks.",
        "slack.com/services/T",
        &g.pick(&format!("{UPPER}{DIGITS}"), 8),
        "/B",
        &g.pick(&format!("{UPPER}{DIGITS}"), 10),
        "/",
        &g.pick(&alnum(), 24),
    ])
}

pub fn corpus() -> Vec<CorpusItem> {
    let mut g = Fake::new(0x5EC2_E7C0_2F05);
    let mut items = Vec::new();
    let mut pos = |name: &str, expect: &'static str, secret: String, text: String| {
        assert!(
            text.contains(&secret),
            "{name}: the text must carry the secret"
        );
        items.push(CorpusItem {
            name: format!("pos/{name}"),
            text,
            expect: Some(expect),
            secret: Some(secret),
        });
    };

    // --- AWS
    let s = cat(&["AK", "IA", &g.pick(BASE32, 16)]);
    pos(
        "aws-access-key-id/.env",
        "aws-access-key-id",
        s.clone(),
        format!("AWS_ACCESS_KEY_ID={s}\nAWS_DEFAULT_REGION=eu-west-1\n"),
    );
    let s = cat(&["AS", "IA", &g.pick(BASE32, 16)]);
    pos(
        "aws-access-key-id/shell-history",
        "aws-access-key-id",
        s.clone(),
        format!(
            "  501  aws configure set aws_access_key_id {s} --profile prod\n  502  aws s3 ls\n"
        ),
    );
    let s = g.pick(&b64(), 40);
    pos(
        "aws-secret-access-key/.env",
        "aws-secret-access-key",
        s.clone(),
        format!("AWS_SECRET_ACCESS_KEY={s}\n"),
    );
    let s = g.pick(&b64(), 40);
    let id = cat(&["AS", "IA", &g.pick(BASE32, 16)]);
    pos(
        "aws-secret-access-key/sts-json",
        "aws-secret-access-key",
        s.clone(),
        format!(
            "{{\n  \"Credentials\": {{\n    \"AccessKeyId\": \"{id}\",\n    \"SecretAccessKey\": \"{s}\",\n    \"Expiration\": \"2030-01-01T00:00:00Z\"\n  }}\n}}\n"
        ),
    );

    // --- GitHub
    let s = cat(&["gh", "p_", &g.pick(&alnum(), 36)]);
    pos(
        "github-pat/shell-export",
        "github-pat",
        s.clone(),
        format!("export GITHUB_TOKEN={s}\ngh auth status\n"),
    );
    let s = cat(&["gh", "p_", &g.pick(&alnum(), 36)]);
    pos(
        "github-pat/clone-url",
        "github-pat",
        s.clone(),
        format!("git clone https://{s}@github.com/acme/platform.git\n"),
    );
    let s = cat(&[
        "github",
        "_pat_",
        &g.pick(&alnum(), 22),
        "_",
        &g.pick(&alnum(), 59),
    ]);
    pos(
        "github-fine-grained-pat/yaml",
        "github-fine-grained-pat",
        s.clone(),
        format!("github:\n  owner: acme\n  token: {s}\n"),
    );
    let s = cat(&["gh", "o_", &g.pick(&alnum(), 36)]);
    pos(
        "github-oauth-token/json",
        "github-oauth-token",
        s.clone(),
        format!("{{\"access_token\":\"{s}\",\"token_type\":\"bearer\",\"scope\":\"repo,gist\"}}"),
    );
    let s = cat(&["gh", "s_", &g.pick(&alnum(), 36)]);
    pos(
        "github-app-token/typescript",
        "github-app-token",
        s.clone(),
        format!(
            "const installationToken = \"{s}\";\nconst octokit = new Octokit({{ auth: installationToken }});\n"
        ),
    );
    let s = cat(&["gh", "u_", &g.pick(&alnum(), 36)]);
    pos(
        "github-app-token/http-header",
        "github-app-token",
        s.clone(),
        format!(
            "GET /user HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token {s}\r\nAccept: application/vnd.github+json\r\n"
        ),
    );

    // --- GitLab
    let s = cat(&["gl", "pat-", &g.pick(&alnum(), 20)]);
    pos(
        "gitlab-pat/.env",
        "gitlab-pat",
        s.clone(),
        format!("GITLAB_URL=https://gitlab.com\nGITLAB_TOKEN={s}\n"),
    );
    let s = cat(&["gl", "pat-", &g.pick(&alnum(), 20)]);
    pos(
        "gitlab-pat/remote-url",
        "gitlab-pat",
        s.clone(),
        format!("[remote \"origin\"]\n\turl = https://oauth2:{s}@gitlab.com/acme/api.git\n"),
    );

    // --- Slack
    let s = cat(&[
        "xo",
        "xb-",
        &g.pick(DIGITS, 12),
        "-",
        &g.pick(DIGITS, 13),
        "-",
        &g.pick(&alnum(), 24),
    ]);
    pos(
        "slack-bot-token/python",
        "slack-bot-token",
        s.clone(),
        format!("from slack_sdk import WebClient\nclient = WebClient(token=\"{s}\")\n"),
    );
    let s = cat(&[
        "xo",
        "xp-",
        &g.pick(DIGITS, 12),
        "-",
        &g.pick(DIGITS, 12),
        "-",
        &g.pick(DIGITS, 13),
        "-",
        &g.pick(HEX, 32),
    ]);
    pos(
        "slack-user-token/yaml",
        "slack-user-token",
        s.clone(),
        format!("slack:\n  workspace: acme\n  user_token: {s}\n"),
    );
    let s = cat(&[
        "xa",
        "pp-1-A",
        &g.pick(&format!("{UPPER}{DIGITS}"), 10),
        "-",
        &g.pick(DIGITS, 13),
        "-",
        &g.pick(HEX, 64),
    ]);
    pos(
        "slack-app-token/.env",
        "slack-app-token",
        s.clone(),
        format!("SLACK_APP_TOKEN={s}\nSLACK_SOCKET_MODE=true\n"),
    );
    let s = slack_webhook(&mut g);
    pos(
        "slack-webhook-url/shell-history",
        "slack-webhook-url",
        s.clone(),
        format!(
            "curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy done\"}}' {s}\n"
        ),
    );

    // --- Stripe
    let s = cat(&["sk_", "live_", &g.pick(&alnum(), 24)]);
    pos(
        "stripe-secret-key/python",
        "stripe-secret-key",
        s.clone(),
        format!("import stripe\nstripe.api_key = \"{s}\"\n"),
    );
    let s = cat(&["rk_", "test_", &g.pick(&alnum(), 24)]);
    pos(
        "stripe-secret-key/.env-restricted",
        "stripe-secret-key",
        s.clone(),
        format!("STRIPE_RESTRICTED_KEY={s}\n"),
    );

    // --- OpenAI / Anthropic
    let s = cat(&[
        "sk-",
        "proj-",
        &g.pick(&format!("{}_-", alnum()), 74),
        "T3Blbk",
        "FJ",
        &g.pick(&format!("{}_-", alnum()), 74),
    ]);
    pos(
        "openai-api-key/.env",
        "openai-api-key",
        s.clone(),
        format!("OPENAI_API_KEY={s}\nOPENAI_MODEL=gpt-4o\n"),
    );
    let s = cat(&[
        "sk-",
        &g.pick(&alnum(), 20),
        "T3Blbk",
        "FJ",
        &g.pick(&alnum(), 20),
    ]);
    pos(
        "openai-api-key/python-legacy",
        "openai-api-key",
        s.clone(),
        format!("import openai\nopenai.api_key = '{s}'\n"),
    );
    let s = cat(&["sk-", "ant-api03-", &g.pick(&b64url(), 93), "AA"]);
    pos(
        "anthropic-api-key/curl-header",
        "anthropic-api-key",
        s.clone(),
        format!(
            "curl https://api.anthropic.com/v1/messages \\\n  -H \"x-api-key: {s}\" \\\n  -H \"anthropic-version: 2023-06-01\"\n"
        ),
    );

    // --- Google
    let s = cat(&["AI", "za", &g.pick(&b64url(), 35)]);
    pos(
        "google-api-key/url",
        "google-api-key",
        s.clone(),
        format!("https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={s}\n"),
    );
    let s = cat(&["AI", "za", &g.pick(&b64url(), 35)]);
    pos(
        "google-api-key/js-config",
        "google-api-key",
        s.clone(),
        format!(
            "const firebaseConfig = {{\n  apiKey: \"{s}\",\n  authDomain: \"acme.firebaseapp.com\",\n}};\n"
        ),
    );
    let body = pem_body(&mut g, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 1624, 64, "\\n");
    let s = format!(
        "{}\\n{body}\\n{}\\n",
        header(&cat(&["PRIVATE", " KEY"]), true),
        header(&cat(&["PRIVATE", " KEY"]), false)
    );
    pos(
        "gcp-service-account-key/json",
        "gcp-service-account-key",
        s.clone(),
        format!(
            "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"acme-prod\",\n  \"private_key_id\": \"{}\",\n  \"private_key\": \"{s}\",\n  \"client_email\": \"deployer@acme-prod.iam.gserviceaccount.com\",\n  \"client_id\": \"{}\"\n}}\n",
            g.pick(HEX, 40),
            g.pick(DIGITS, 21)
        ),
    );

    // --- Azure
    let s = cat(&[&g.pick(&b64(), 86), "=="]);
    pos(
        "azure-storage-connection-string/appsettings-json",
        "azure-storage-connection-string",
        s.clone(),
        format!(
            "{{\n  \"Storage\": {{\n    \"ConnectionString\": \"DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={s};EndpointSuffix=core.windows.net\"\n  }}\n}}\n"
        ),
    );
    let s = cat(&[&g.pick(&b64(), 43), "="]);
    pos(
        "azure-shared-access-key/.env",
        "azure-shared-access-key",
        s.clone(),
        format!(
            "SERVICEBUS_CONNECTION=Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={s}\n"
        ),
    );
    let s = cat(&[
        &g.pick(&alnum(), 20),
        "%2B",
        &g.pick(&alnum(), 12),
        "%2F",
        &g.pick(&alnum(), 9),
        "%3D",
    ]);
    pos(
        "azure-sas-token/url",
        "azure-sas-token",
        s.clone(),
        format!(
            "https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00:00:00Z&spr=https&sig={s}\n"
        ),
    );

    // --- Twilio / SendGrid
    let s = cat(&["S", "K", &g.pick(HEX, 32)]);
    pos(
        "twilio-api-key/.env",
        "twilio-api-key",
        s.clone(),
        format!("TWILIO_API_KEY={s}\n"),
    );
    let s = g.pick(HEX, 32);
    pos(
        "twilio-auth-token/.env",
        "twilio-auth-token",
        s.clone(),
        format!(
            "TWILIO_ACCOUNT_SID=AC{}\nTWILIO_AUTH_TOKEN={s}\n",
            g.pick(HEX, 32)
        ),
    );
    let s = cat(&[
        "S",
        "G.",
        &g.pick(&b64url(), 22),
        ".",
        &g.pick(&b64url(), 43),
    ]);
    pos(
        "sendgrid-api-key/.env",
        "sendgrid-api-key",
        s.clone(),
        format!("SENDGRID_API_KEY={s}\n"),
    );

    // --- Package registries
    let s = cat(&["np", "m_", &g.pick(&alnum(), 36)]);
    pos(
        "npm-access-token/.npmrc",
        "npm-access-token",
        s.clone(),
        format!("registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={s}\n"),
    );
    let s = g.uuid();
    pos(
        "npmrc-auth-token/legacy-uuid",
        "npmrc-auth-token",
        s.clone(),
        format!(
            "@acme:registry=https://npm.pkg.github.com/\n//npm.pkg.github.com/:_authToken={s}\n"
        ),
    );
    let s = cat(&["py", "pi-AgEIcHlwaS5vcmc", &g.pick(&b64url(), 120)]);
    pos(
        "pypi-upload-token/.pypirc",
        "pypi-upload-token",
        s.clone(),
        format!("[pypi]\nusername = __token__\npassword = {s}\n"),
    );
    let s = cat(&["dck", "r_pat_", &g.pick(&b64url(), 27)]);
    pos(
        "dockerhub-pat/shell-history",
        "dockerhub-pat",
        s.clone(),
        format!("echo {s} | docker login -u acme --password-stdin\n"),
    );

    // --- Discord
    let id = base64(format!("1{}", g.pick(DIGITS, 17)).as_bytes(), true);
    let s = format!("{id}.{}.{}", g.pick(&b64url(), 6), g.pick(&b64url(), 38));
    pos(
        "discord-bot-token/python",
        "discord-bot-token",
        s.clone(),
        format!(
            "import discord\nclient = discord.Client(intents=discord.Intents.default())\nclient.run(\"{s}\")\n"
        ),
    );

    // --- JWT
    let s = jwt(&mut g);
    pos(
        "jwt/cookie-header",
        "jwt",
        s.clone(),
        format!("HTTP/1.1 200 OK\nSet-Cookie: session={s}; Path=/; HttpOnly\n"),
    );

    // --- Private keys
    let kind = cat(&["RSA PRIVATE", " KEY"]);
    let body = pem_body(&mut g, "MIIEowIBAAKCAQEA", 1592, 64, "\n");
    pos(
        "private-key/pem-file",
        "private-key",
        body.clone(),
        format!(
            "{}\n{body}\n{}\n",
            header(&kind, true),
            header(&kind, false)
        ),
    );
    let kind = cat(&["PRIVATE", " KEY"]);
    let body = pem_body(&mut g, "MIIEvgIBADANBgkqhkiG9w0BAQEFAASC", 1624, 64, "\\n");
    pos(
        "private-key/.env-escaped",
        "private-key",
        body.clone(),
        format!(
            "JWT_SIGNING_KEY=\"{}\\n{body}\\n{}\\n\"\n",
            header(&kind, true),
            header(&kind, false)
        ),
    );
    let kind = cat(&["EC PRIVATE", " KEY"]);
    let body = pem_body(&mut g, "MHcCAQEEI", 128, 64, "\n");
    pos(
        "private-key/truncated-context-chunk",
        "private-key",
        body.clone(),
        format!("{}\n{body}\n", header(&kind, true)),
    );
    let kind = cat(&["OPENSSH PRIVATE", " KEY"]);
    let body = pem_body(
        &mut g,
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
        400,
        70,
        "\n",
    );
    pos(
        "openssh-private-key/id_ed25519",
        "openssh-private-key",
        body.clone(),
        format!(
            "{}\n{body}\n{}\n",
            header(&kind, true),
            header(&kind, false)
        ),
    );

    // --- URLs with passwords
    let s = g.pick(&alnum(), 18);
    pos(
        "database-url-password/.env-postgres",
        "database-url-password",
        s.clone(),
        format!("DATABASE_URL=postgres://app:{s}@db.internal:5432/app?sslmode=require\n"),
    );
    let s = g.pick(&alnum(), 16);
    pos(
        "database-url-password/yaml-mongodb",
        "database-url-password",
        s.clone(),
        format!(
            "mongo:\n  uri: \"mongodb+srv://svc-api:{s}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true\"\n"
        ),
    );
    let s = g.pick(&alnum(), 24);
    pos(
        "database-url-password/redis-no-user",
        "database-url-password",
        s.clone(),
        format!("REDIS_URL=redis://:{s}@cache.internal:6379/0\n"),
    );
    let s = g.pick(&alnum(), 20);
    pos(
        "url-credentials/git-remote",
        "url-credentials",
        s.clone(),
        format!("$ git remote add origin https://deploy:{s}@git.acme.io/platform/api.git\n"),
    );

    // --- Authorization headers
    let s = base64(format!("alice:{}", g.pick(&alnum(), 14)).as_bytes(), false);
    pos(
        "authorization-header/basic-http",
        "authorization-header",
        s.clone(),
        format!(
            "GET /api/v1/reports HTTP/1.1\nHost: api.acme.io\nAuthorization: Basic {s}\nAccept: */*\n"
        ),
    );
    let s = g.pick(&alnum(), 40);
    pos(
        "authorization-header/bearer-curl",
        "authorization-header",
        s.clone(),
        format!("curl -s -H 'Authorization: Bearer {s}' https://api.acme.io/v1/me\n"),
    );

    // --- Generic assignments
    let s = cat(&[&g.pick(&alnum(), 6), "&", &g.pick(&alnum(), 5)]);
    pos(
        "generic-password/yaml",
        "generic-password",
        s.clone(),
        format!("database:\n  host: db.internal\n  user: app\n  password: {s}\n"),
    );
    let s = cat(&[&g.pick(&alnum(), 4), "-", &g.pick(&alnum(), 6), "!"]);
    pos(
        "generic-password/ini",
        "generic-password",
        s.clone(),
        format!("[database]\ndb_user = app\ndb_password = {s}\n"),
    );
    let s = g.pick(&alnum(), 12);
    pos(
        "generic-password/json",
        "generic-password",
        s.clone(),
        format!("{{\"username\": \"svc-report\", \"password\": \"{s}\"}}"),
    );
    let s = g.pick(
        &format!("{}!@#%^&*(-_=+)", alnum()).replace(['(', ')'], ""),
        50,
    );
    pos(
        "generic-secret/django-settings",
        "generic-secret",
        s.clone(),
        format!("DEBUG = False\nSECRET_KEY = \"{s}\"\nALLOWED_HOSTS = [\"acme.io\"]\n"),
    );
    let s = g.pick(&alnum(), 32);
    pos(
        "generic-secret/oauth-json",
        "generic-secret",
        s.clone(),
        format!(
            "{{\"client_id\": \"acme-web\", \"client_secret\": \"{s}\", \"redirect_uri\": \"https://acme.io/cb\"}}"
        ),
    );
    let s = g.pick(HEX, 32);
    pos(
        "generic-secret/yaml-api-key",
        "generic-secret",
        s.clone(),
        format!("openweather:\n  api_key: {s}\n  units: metric\n"),
    );
    let s = g.pick(&alnum(), 28);
    pos(
        "generic-secret/prompt-prose",
        "generic-secret",
        s.clone(),
        format!("Here is my API token: {s} - why does the call return 401?\n"),
    );
    let s = format!("base64:{}=", g.pick(&b64(), 43));
    pos(
        "generic-secret/laravel-app-key",
        "generic-secret",
        s.clone(),
        format!("APP_NAME=Acme\nAPP_ENV=production\nAPP_KEY={s}\n"),
    );

    // --- Encoded secrets (decoded and scanned again, as gitleaks does): the "secret" is the
    // encoded run, which is what a finding covers and redaction replaces.
    {
        use base64::Engine as _;
        let pat = cat(&["gh", "p_", &g.pick(&alnum(), 36)]);
        let s = base64::engine::general_purpose::STANDARD.encode(&pat);
        pos(
            "encoded/base64-k8s-secret",
            "github-pat",
            s.clone(),
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ci-bot\ntype: Opaque\ndata:\n  value: {s}\n"
            ),
        );
        let hook = slack_webhook(&mut g);
        let s: String =
            percent_encoding::utf8_percent_encode(&hook, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        pos(
            "encoded/percent-query-string",
            "slack-webhook-url",
            s.clone(),
            format!("GET /relay?target={s} HTTP/1.1\nHost: relay.acme.io\n"),
        );
        let key = cat(&["sk_", "live_", &g.pick(&alnum(), 24)]);
        let s = hex::encode(&key);
        pos(
            "encoded/hex-then-base64",
            "stripe-secret-key",
            base64::engine::general_purpose::STANDARD.encode(&s),
            format!(
                "{{\"blob\": \"{}\"}}",
                base64::engine::general_purpose::STANDARD.encode(&s)
            ),
        );
    }

    // ============================== negatives ==============================
    let mut neg = |name: &str, text: String| {
        items.push(CorpusItem {
            name: format!("neg/{name}"),
            text,
            expect: None,
            secret: None,
        });
    };
    {
        use base64::Engine as _;
        let s = base64::engine::general_purpose::STANDARD
            .encode("{\"theme\": \"dark\", \"fontSize\": 14, \"token_refresh\": true}");
        neg(
            "encoded/base64-harmless-json",
            format!("settings_blob: {s}\n"),
        );
        neg(
            "encoded/percent-search-url",
            "https://www.acme.io/search?q=rotate%20the%20api%20token%20%26%20password%3F\n"
                .to_string(),
        );
    }
    let u = g.uuid();
    neg(
        "uuid/json",
        format!("{{\"request_id\": \"{u}\", \"status\": \"ok\"}}"),
    );
    let u = g.uuid();
    neg(
        "uuid/log-line",
        format!(
            "2024-05-01T10:00:00Z INFO trace_id={u} span_id={} GET /health 200 3ms\n",
            g.pick(HEX, 16)
        ),
    );
    let u = g.uuid();
    neg(
        "uuid/rust-const",
        format!("const DEFAULT_TENANT: &str = \"{u}\";\n"),
    );
    let sha = g.pick(HEX, 40);
    neg(
        "git-sha/log",
        format!(
            "commit {sha}\nAuthor: Jane Doe <jane@acme.io>\nDate:   Mon May 6 10:00:00 2024 +0200\n\n    fix: refresh the token list when it is empty\n"
        ),
    );
    let sha = g.pick(HEX, 40);
    neg(
        "git-sha/api-json",
        format!(
            "{{\"sha\": \"{sha}\", \"url\": \"https://api.github.com/repos/acme/api/commits/{sha}\"}}"
        ),
    );
    neg(
        "git-sha/short-merge",
        format!(
            "Merge pull request #42 from acme/token-refresh ({})\n",
            g.pick(HEX, 7)
        ),
    );
    let integrity = format!("sha512-{}==", g.pick(&b64(), 86));
    neg(
        "lockfile/package-lock",
        format!(
            "\"node_modules/left-pad\": {{\n  \"version\": \"1.3.0\",\n  \"resolved\": \"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz\",\n  \"integrity\": \"{integrity}\"\n}}\n"
        ),
    );
    let integrity = format!("sha512-{}==", g.pick(&b64(), 86));
    neg(
        "lockfile/yarn",
        format!(
            "left-pad@^1.3.0:\n  version \"1.3.0\"\n  resolved \"https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#{}\"\n  integrity {integrity}\n",
            g.pick(HEX, 40)
        ),
    );
    neg(
        "lockfile/cargo",
        format!(
            "[[package]]\nname = \"serde\"\nversion = \"1.0.203\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{}\"\n",
            g.pick(HEX, 64)
        ),
    );
    neg(
        "lockfile/pip-hash",
        format!(
            "requests==2.32.3 \\\n    --hash=sha256:{}\n",
            g.pick(HEX, 64)
        ),
    );
    neg(
        "digest/docker-image",
        format!(
            "services:\n  web:\n    image: nginx@sha256:{}\n",
            g.pick(HEX, 64)
        ),
    );
    neg(
        "digest/sha256sum",
        format!("{}  release.tar.gz\n", g.pick(HEX, 64)),
    );
    neg(
        "base64-image/html",
        format!(
            "<img alt=\"logo\" src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{}==\">\n",
            g.pick(&b64(), 1200)
        ),
    );
    neg(
        "base64-image/css",
        format!(
            ".icon {{ background: url(data:image/gif;base64,R0lGODlhEAAQAP{}=); }}\n",
            g.pick(&b64(), 300)
        ),
    );
    neg(
        "example-key/aws-docs-id",
        format!(
            "AWS_ACCESS_KEY_ID={}\n",
            cat(&["AKIA", "IOSFODNN7", "EXAMPLE"])
        ),
    );
    neg(
        "example-key/aws-docs-secret",
        format!(
            "[default]\naws_secret_access_key = {}\n",
            cat(&["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCY", "EXAMPLEKEY"])
        ),
    );
    neg(
        "example-key/github-token-filler",
        format!(
            "export GITHUB_TOKEN={}\n",
            cat(&["gh", "p_", &"x".repeat(36)])
        ),
    );
    neg(
        "example-key/stripe-publishable",
        format!(
            "<script src=\"https://js.stripe.com/v3/\"></script>\n<script>const stripe = Stripe('{}');</script>\n",
            cat(&["pk_", "live_", &g.pick(&alnum(), 24)])
        ),
    );
    neg(
        "public-key/ssh-authorized-keys",
        format!(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} jane@laptop\n",
            g.pick(&b64(), 43)
        ),
    );
    neg(
        "public-key/pem",
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            pem_body(
                &mut g,
                "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA",
                392,
                64,
                "\n"
            )
        ),
    );
    neg(
        "public-key/certificate",
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            pem_body(&mut g, "MIIDdzCCAl+gAwIBAgIE", 1200, 64, "\n")
        ),
    );
    neg(
        "public-key/age-recipient",
        format!(
            "# recipients for sops\nage1{}\n",
            g.pick("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)
        ),
    );
    neg(
        "placeholder/private-key-doc",
        format!(
            "{}\n...\n{}\n",
            header(&cat(&["PRIVATE", " KEY"]), true),
            header(&cat(&["PRIVATE", " KEY"]), false)
        ),
    );
    neg(
        "placeholder/env-example",
        "OPENAI_API_KEY=your-api-key\nANTHROPIC_API_KEY=<your-anthropic-key>\nSTRIPE_SECRET_KEY=sk_test_your_key_here\nDATABASE_URL=postgres://user:password@localhost:5432/app\n".to_string(),
    );
    neg(
        "placeholder/templated-env",
        "PASSWORD=${DB_PASSWORD}\nAPI_TOKEN=$API_TOKEN\nSECRET={{ vault_secret }}\n".to_string(),
    );
    neg(
        "placeholder/angle-token",
        "curl -H 'Authorization: Bearer <token>' https://api.acme.io/v1/me\n".to_string(),
    );
    neg(
        "placeholder/bearer-env-var",
        "curl -H \"Authorization: Bearer $ACCESS_TOKEN\" https://api.acme.io/v1/me\n".to_string(),
    );
    neg(
        "placeholder/changeme",
        "admin:\n  username: admin\n  password: changeme\n".to_string(),
    );
    neg(
        "placeholder/xxxx",
        "secret: xxxxxxxxxxxxxxxx\napi_key = \"xxxx-xxxx-xxxx\"\n".to_string(),
    );
    neg(
        "placeholder/masked",
        "password: \"********\"\ntoken: ****************\n".to_string(),
    );
    neg(
        "placeholder/database-url-vars",
        "DATABASE_URL=postgres://${PGUSER}:${PGPASSWORD}@db:5432/app\n".to_string(),
    );
    neg(
        "placeholder/github-actions",
        "      - uses: actions/checkout@v4\n        with:\n          token: ${{ secrets.GITHUB_TOKEN }}\n".to_string(),
    );
    neg(
        "no-value/env",
        "DB_USER=app\nDB_PASSWORD=\nAPI_TOKEN=\n".to_string(),
    );
    neg(
        "no-value/yaml",
        "database:\n  password:\n  token: \"\"\n".to_string(),
    );
    neg(
        "no-value/json-null",
        "{\"username\": \"svc\", \"password\": null}".to_string(),
    );
    neg(
        "no-value/python-signature",
        "def login(username: str, password: str) -> bool:\n    return check(username, password)\n"
            .to_string(),
    );
    neg(
        "no-value/python-getpass",
        "password = getpass.getpass(\"Password: \")\ntoken = os.environ[\"API_TOKEN\"]\n"
            .to_string(),
    );
    neg(
        "no-value/rust-env",
        "let password = std::env::var(\"DB_PASSWORD\")?;\nlet secret = load_secret(&config)?;\n"
            .to_string(),
    );
    neg(
        "no-value/html-input",
        "<label for=\"password\">Password</label>\n<input type=\"password\" name=\"password\" required>\n".to_string(),
    );
    neg(
        "no-value/helm",
        "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: password\n".to_string(),
    );
    neg(
        "no-value/terraform",
        "resource \"aws_db_instance\" \"main\" {\n  username = var.db_user\n  password = var.db_password\n}\n".to_string(),
    );
    neg(
        "no-value/js-env",
        "const client = new OpenAI({\n  apiKey: process.env.OPENAI_API_KEY,\n});\n".to_string(),
    );
    neg(
        "code/token-identifiers",
        "max_tokens = 4096\ntoken_type = \"Bearer\"\ntokenizer = AutoTokenizer.from_pretrained(\"bert-base-uncased\")\nconst token = await getToken(req);\n".to_string(),
    );
    neg(
        "code/secret-check",
        "if (!secret) {\n  throw new Error(\"missing secret: set API_SECRET\");\n}\n".to_string(),
    );
    neg(
        "prose/password-reset",
        "To reset your password: open Settings, then Security, and follow the link we email you.\n"
            .to_string(),
    );
    neg(
        "prose/task-disk",
        "The disk-backed task-runner keeps sk-style ids short; see ask-sk_tool docs.\n".to_string(),
    );
    neg(
        "aws/arn",
        "RoleArn: arn:aws:iam::123456789012:role/deploy\nBucket: arn:aws:s3:::acme-artifacts\n"
            .to_string(),
    );
    neg(
        "ids/ulid-and-nanoid",
        format!(
            "order: {}\nshort_id: {}\n",
            g.pick("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 26),
            g.pick(&b64url(), 21)
        ),
    );
    neg(
        "ids/base64-config-blob",
        format!(
            "\"config\": \"{}\"\n",
            base64(br#"{"theme":"dark","lang":"en"}"#, false)
        ),
    );
    neg(
        "ids/twilio-account-sid",
        format!("TWILIO_ACCOUNT_SID=AC{}\n", g.pick(HEX, 32)),
    );
    neg(
        "url/plain",
        "See https://docs.acme.io/guides/auth?lang=en#tokens and https://user@example.org/repo.git\n".to_string(),
    );
    neg(
        "http/headers",
        "HTTP/1.1 401 Unauthorized\nWWW-Authenticate: Bearer realm=\"api\"\nContent-Type: application/json\n".to_string(),
    );
    neg(
        "shell/history",
        "  100  cargo build --release\n  101  export RUST_LOG=debug\n  102  kubectl get secrets -n prod\n  103  git log --oneline | head\n".to_string(),
    );
    neg(
        "yaml/k8s-secret-ref",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  username: app\n".to_string(),
    );
    neg(
        "numbers/timestamps",
        "{\"created\": 1700000000000, \"token_count\": 12345678, \"ratio\": 0.123456789}\n"
            .to_string(),
    );
    items
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
