//! The coverage corpus: several hundred generated positives across every rule family (gitleaks'
//! default families, URLs and command lines, framework settings, chat and ML platforms,
//! passwords in prose, private-key fragments) and a negative set of realistic non-secrets.
//!
//! The corpus is data: a table of token families (rule id, variable name, token spec) placed in
//! a few contexts each, a table of hand-written contexts, and a table of negatives. A token spec
//! is parts joined by `|`: `%<class><n>` draws `n` characters of a class, anything else is
//! literal. Prefixes are written in two parts, so no token appears literally in this file.

use super::{DIGITS, Fake, HEX, alnum, b64, b64url};

/// One corpus text. `expect` is the rule id a positive must be found by; `secret` is what the
/// finding must cover.
pub struct Case {
    pub name: String,
    pub text: String,
    pub expect: Option<&'static str>,
    pub secret: Option<String>,
}

/// Token families with a format of their own: (rule id, variable name, token spec).
const TOKENS: &[(&str, &str, &str)] = &[
    ("aws-access-key-id", "AWS_ACCESS_KEY_ID", "AK|IA|%B16"),
    ("github-pat", "GITHUB_TOKEN", "gh|p_|%a36"),
    (
        "github-fine-grained-pat",
        "GH_PAT",
        "github|_pat_|%a22|_|%a59",
    ),
    ("github-oauth-token", "GH_OAUTH_TOKEN", "gh|o_|%a36"),
    ("github-app-token", "GH_APP_TOKEN", "gh|s_|%a36"),
    ("github-refresh-token", "GH_REFRESH_TOKEN", "gh|r_|%a76"),
    ("gitlab-pat", "GITLAB_TOKEN", "gl|pat-|%a20"),
    ("gitlab-token", "GITLAB_DEPLOY_TOKEN", "gl|dt-|%a20"),
    ("gitlab-token", "RUNNER_TOKEN", "gl|rt-|%a20"),
    ("gitlab-token", "GITLAB_TRIGGER", "gl|ptt-|%h40"),
    (
        "slack-bot-token",
        "SLACK_BOT_TOKEN",
        "xo|xb-|%d12|-|%d13|-|%a24",
    ),
    (
        "slack-user-token",
        "SLACK_USER_TOKEN",
        "xo|xp-|%d12|-|%d12|-|%d13|-|%h32",
    ),
    (
        "slack-app-token",
        "SLACK_APP_TOKEN",
        "xa|pp-1-A|%U10|-|%d13|-|%h64",
    ),
    (
        "slack-config-token",
        "SLACK_CONFIG_TOKEN",
        "xo|xe.xoxp-1-|%U160",
    ),
    (
        "slack-legacy-token",
        "SLACK_LEGACY_BOT",
        "xo|xb-|%d10|-|%a24",
    ),
    (
        "slack-webhook-url",
        "SLACK_WEBHOOK",
        "https://hooks.|slack.com/services/T|%U8|/B|%U10|/|%a24",
    ),
    ("stripe-secret-key", "STRIPE_SECRET_KEY", "sk_|live_|%a24"),
    ("stripe-secret-key", "STRIPE_RESTRICTED", "rk_|live_|%a24"),
    ("stripe-webhook-secret", "STRIPE_WEBHOOK", "wh|sec_|%a32"),
    (
        "openai-api-key",
        "OPENAI_API_KEY",
        "sk-|proj-|%w74|T3Blbk|FJ|%w74",
    ),
    (
        "anthropic-api-key",
        "ANTHROPIC_API_KEY",
        "sk-|ant-api03-|%w93|AA",
    ),
    ("google-api-key", "GOOGLE_API_KEY", "AI|za|%w35"),
    ("twilio-api-key", "TWILIO_API_KEY", "S|K|%h32"),
    ("sendgrid-api-key", "SENDGRID_API_KEY", "S|G.|%w22|.|%w43"),
    ("npm-access-token", "NPM_TOKEN", "np|m_|%a36"),
    (
        "pypi-upload-token",
        "TWINE_PASSWORD",
        "py|pi-AgEIcHlwaS5vcmc|%w120",
    ),
    ("dockerhub-pat", "DOCKERHUB_TOKEN", "dck|r_pat_|%w27"),
    (
        "jwt",
        "SESSION_JWT",
        "ey|JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9|.eyJ|%w30|.|%w43",
    ),
    (
        "1password-token",
        "OP_SECRET_KEY",
        "A3|-|%U6|-|%U11|-|%U5|-|%U5|-|%U5",
    ),
    ("adobe-client-secret", "ADOBE_SECRET", "p8|e-|%a32"),
    ("age-secret-key", "SOPS_AGE_KEY", "AGE-SECRET|-KEY-1|%c58"),
    ("airtable-token", "AIRTABLE_PAT", "pat|%a14|.|%h64"),
    ("alibaba-access-key-id", "ALIYUN_AK", "LT|AI|%a20"),
    ("artifactory-token", "ARTIFACTORY_API_KEY", "AK|Cp|%a69"),
    ("atlassian-api-token", "JIRA_TOKEN", "ATA|TT3|%a186"),
    (
        "authress-access-key",
        "AUTHRESS_KEY",
        "sc|_|%a10|.|%a5|.acc_|%L20|.|%a60",
    ),
    (
        "aws-bedrock-api-key",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AB|SK|%a120",
    ),
    (
        "azure-ad-client-secret",
        "AZURE_CLIENT_SECRET",
        "%a3|%d1|Q|~|%a32",
    ),
    (
        "clickhouse-cloud-api-secret",
        "CLICKHOUSE_KEY",
        "4b|1d|%a38",
    ),
    ("clojars-api-token", "CLOJARS_DEPLOY", "CLOJARS|_|%L60"),
    (
        "cloudflare-origin-ca-key",
        "CF_ORIGIN_CA_KEY",
        "v1.|0-|%h24|-|%h146",
    ),
    ("databricks-api-token", "DATABRICKS_TOKEN", "da|pi|%h32"),
    (
        "defined-networking-api-token",
        "DN_API_KEY",
        "dn|key-|%a26|-|%a52",
    ),
    ("digitalocean-token", "DIGITALOCEAN_TOKEN", "do|p_v1_|%h64"),
    ("doppler-api-token", "DOPPLER_TOKEN", "dp.|pt.|%a43"),
    ("dropbox-api-token", "DROPBOX_ACCESS", "sl|.|%w140"),
    ("duffel-api-token", "DUFFEL_TOKEN", "duffel|_live_|%w43"),
    (
        "dynatrace-api-token",
        "DT_API_TOKEN",
        "dt0c01|.|%U24|.|%a64",
    ),
    ("easypost-api-token", "EASYPOST_KEY", "EZ|AK|%a54"),
    ("facebook-access-token", "FB_PAGE_TOKEN", "EA|AC|%a120"),
    (
        "flutterwave-secret-key",
        "FLW_SECRET",
        "FLWSECK|_TEST-|%h32|-X",
    ),
    ("flyio-access-token", "FLY_API_TOKEN", "fo|1_|%w43"),
    ("frameio-api-token", "FRAMEIO_TOKEN", "fio|-u-|%w64"),
    ("grafana-token", "GRAFANA_SA_TOKEN", "gl|sa_|%a32|_|%h8"),
    ("grafana-token", "GRAFANA_CLOUD_TOKEN", "gl|c_|%b60"),
    (
        "harness-api-key",
        "HARNESS_TOKEN",
        "pat|.|%w22|.|%a24|.|%a20",
    ),
    (
        "hashicorp-tf-api-token",
        "TFE_TOKEN",
        "%a14|.atlas|v1.|%w64",
    ),
    ("heroku-api-key", "HEROKU_KEY", "HRKU|-AA|%w58"),
    ("huggingface-token", "HF_TOKEN", "hf|_|%A34"),
    ("infracost-api-token", "INFRACOST_API_KEY", "ico|-|%a32"),
    ("intra42-client-secret", "FT_SECRET", "s-s4t2|ud-|%h64"),
    ("linear-api-key", "LINEAR_TOKEN", "lin|_api_|%a40"),
    ("mailchimp-api-key", "MAILCHIMP_KEY", "%h32|-us|%d2"),
    ("mailgun-api-key", "MAILGUN_KEY", "ke|y-|%h32"),
    (
        "mapbox-secret-token",
        "MAPBOX_SECRET",
        "sk.|eyJ|%w60|.|%w22",
    ),
    ("maxmind-license-key", "GEOIP_LICENSE", "%a6|_|%a29|_mmk"),
    ("new-relic-key", "NEW_RELIC_USER_KEY", "NR|AK-|%U27"),
    ("notion-api-token", "NOTION_TOKEN", "nt|n_|%d11|%a35"),
    ("octopus-deploy-api-key", "OCTOPUS_KEY", "AP|I-|%U26"),
    ("openshift-user-token", "OC_TOKEN", "sha256|~|%w43"),
    (
        "plaid-access-token",
        "PLAID_ACCESS",
        "access|-production-|%g",
    ),
    ("planetscale-token", "PSCALE_TOKEN", "pscale|_tkn_|%a43"),
    ("postman-api-token", "POSTMAN_API_KEY", "PM|AK-|%h24|-|%h34"),
    ("prefect-api-token", "PREFECT_API_KEY", "pn|u_|%a36"),
    ("pulumi-api-token", "PULUMI_ACCESS_TOKEN", "pu|l-|%h40"),
    ("readme-api-token", "README_API_KEY", "rd|me_|%L70"),
    ("rubygems-api-token", "GEM_HOST_API_KEY", "rubygems|_|%h48"),
    ("scalingo-api-token", "SCALINGO_TOKEN", "tk-|us-|%w48"),
    ("sendinblue-api-token", "BREVO_KEY", "xkey|sib-|%h64|-|%a16"),
    ("sentry-token", "SENTRY_USER_TOKEN", "sntry|u_|%h64"),
    ("settlemint-token", "SETTLEMINT_TOKEN", "sm_|pat_|%a16"),
    ("shippo-api-token", "SHIPPO_TOKEN", "shippo|_live_|%h40"),
    ("shopify-token", "SHOPIFY_TOKEN", "shp|at_|%h32"),
    ("sonar-api-token", "SONAR_TOKEN", "sq|p_|%h40"),
    ("sourcegraph-access-token", "SRC_ACCESS_TOKEN", "sg|p_|%h40"),
    ("square-access-token", "SQUARE_TOKEN", "sq0|atp-|%w22"),
    (
        "telegram-bot-api-token",
        "TELEGRAM_BOT_TOKEN",
        "%d10|:AA|%w33",
    ),
    (
        "twitter-bearer-token",
        "TWITTER_BEARER",
        "AAAAAAAAAAA|AAAAAAAAAAA|%a90",
    ),
    ("typeform-api-token", "TYPEFORM_TOKEN", "tf|p_|%a59"),
    ("vault-token", "VAULT_TOKEN", "hv|s.|%w100"),
    ("yandex-token", "YC_API_KEY", "AQ|VN|%w36"),
    ("replicate-api-token", "REPLICATE_API_TOKEN", "r8|_|%a37"),
    ("groq-api-key", "GROQ_API_KEY", "gs|k_|%a52"),
    ("perplexity-api-key", "PPLX_API_KEY", "pp|lx-|%a48"),
    (
        "openrouter-api-key",
        "OPENROUTER_API_KEY",
        "sk-|or-v1-|%h64",
    ),
    ("xai-api-key", "XAI_API_KEY", "xa|i-|%a80"),
    (
        "langsmith-api-key",
        "LANGSMITH_API_KEY",
        "lsv2|_pt_|%h32|_|%h10",
    ),
    ("pinecone-api-key", "PINECONE_API_KEY", "pc|sk_|%a6|_|%a64"),
    ("fireworks-api-key", "FIREWORKS_API_KEY", "fw|_|%a24"),
    (
        "microsoft-teams-webhook",
        "TEAMS_WEBHOOK",
        "https://acme.|webhook.office.com/webhookb2/|%g|@|%g|/IncomingWebhook/|%h32|/|%g",
    ),
];

/// Contexts a format-bearing token is placed in (`{N}` the variable, `{n}` it in lower case).
const TOKEN_CONTEXTS: &[(&str, &str)] = &[
    ("env", "export {N}={s}\n"),
    ("yaml", "service:\n  {n}: \"{s}\"\n  retries: 3\n"),
    ("json", "{\"{n}\": \"{s}\", \"timeout\": 30}"),
    ("python", "client = Client(\n    api_key=\"{s}\",\n)\n"),
    (
        "prose",
        "I pasted {s} into the settings page and now every call fails.\n",
    ),
];

/// Services known by name only (the `vendor-api-credential` rule): (variable, value spec).
const NAMED: &[(&str, &str)] = &[
    ("DATADOG_API_KEY", "%h32"),
    ("CLOUDFLARE_API_TOKEN", "%w40"),
    ("ALGOLIA_ADMIN_KEY", "%h32"),
    ("ASANA_SECRET", "%a32"),
    ("BITBUCKET_CLIENT_SECRET", "%a64"),
    ("COHERE_API_KEY", "%a40"),
    ("CO_API_KEY", "%a40"),
    ("COINBASE_API_SECRET", "%w64"),
    ("CONFLUENT_SECRET", "%a64"),
    ("CONTENTFUL_DELIVERY_TOKEN", "%w43"),
    ("DISCORD_CLIENT_SECRET", "%w32"),
    ("DROPBOX_APP_SECRET", "%L15"),
    ("ETSY_API_KEY", "%L24"),
    ("FASTLY_API_TOKEN", "%w32"),
    ("FINNHUB_TOKEN", "%L20"),
    ("FLICKR_SECRET", "%h16"),
    ("FRESHBOOKS_TOKEN", "%h64"),
    ("GITTER_TOKEN", "%h40"),
    ("GOCARDLESS_ACCESS_TOKEN", "live_|%w40"),
    ("HUBSPOT_API_KEY", "%g"),
    ("INTERCOM_ACCESS_TOKEN", "%w60"),
    ("JFROG_ACCESS_TOKEN", "%a64"),
    ("KRAKEN_API_SECRET", "%b88"),
    ("KUCOIN_API_SECRET", "%g"),
    ("LAUNCHDARKLY_SDK_KEY", "sdk-|%g"),
    ("LINKEDIN_CLIENT_SECRET", "%a16"),
    ("LOB_API_KEY", "live_|%h35"),
    ("LOOKER_CLIENT_SECRET", "%a24"),
    ("MATTERMOST_TOKEN", "%L26"),
    ("MESSAGEBIRD_API_KEY", "%a25"),
    ("NETLIFY_AUTH_TOKEN", "%w43"),
    ("NEW_RELIC_LICENSE_KEY", "%h40"),
    ("NYTIMES_API_KEY", "%a32"),
    ("OKTA_API_TOKEN", "00|%w40"),
    ("PLAID_SECRET", "%h30"),
    ("RAPIDAPI_KEY", "%w50"),
    ("SENDBIRD_API_TOKEN", "%h40"),
    ("SENTRY_AUTH_TOKEN", "%h64"),
    ("SNYK_TOKEN", "%g"),
    ("SQUARESPACE_API_KEY", "%g"),
    ("SUMOLOGIC_ACCESS_KEY", "%a64"),
    ("TRAVIS_API_TOKEN", "%a22"),
    ("TWITCH_CLIENT_SECRET", "%L30"),
    ("TWITTER_API_SECRET", "%a50"),
    ("ZENDESK_API_TOKEN", "%a40"),
    ("MISTRAL_API_KEY", "%a32"),
    ("TOGETHER_API_KEY", "%h64"),
    ("DEEPSEEK_API_KEY", "sk-|%h32"),
    ("VOYAGE_API_KEY", "pa-|%w43"),
    ("ELEVENLABS_API_KEY", "sk_|%h48"),
    ("ASSEMBLYAI_API_KEY", "%h32"),
    ("WANDB_API_KEY", "%h40"),
    ("PINECONE_API_KEY", "%g"),
    ("DEEPGRAM_API_KEY", "%h40"),
    ("ADAFRUIT_IO_KEY", "%a32"),
    ("AIRTABLE_API_KEY", "key|%a14"),
    ("ALIBABA_SECRET_KEY", "%a30"),
    ("BEAMER_API_KEY", "b_|%w44"),
    ("BITTREX_SECRET", "%h32"),
    ("MERAKI_API_KEY", "%h40"),
    ("CODECOV_TOKEN", "%g"),
    ("DRONECI_ACCESS_TOKEN", "%a32"),
    ("FACEBOOK_APP_SECRET", "%h32"),
    ("FINICITY_APP_KEY", "%h32"),
    ("PRIVATEAI_API_KEY", "%h32"),
    ("ANYSCALE_API_KEY", "esecret_|%a26"),
    ("STABILITY_API_KEY", "sk-|%a48"),
];

const NAMED_CONTEXTS: &[(&str, &str)] = &[
    ("env", "{N}={s}\n"),
    ("yaml", "{n}: {s}\n"),
    ("json", "{\"{n}\": \"{s}\"}"),
];

/// Hand-written contexts: URLs, command lines, framework settings, prose, key fragments.
const CONTEXTS: &[(&str, &str, &str, &str)] = &[
    (
        "url/postgres",
        "database-url-password",
        "%a18",
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app\n",
    ),
    (
        "url/mysql",
        "database-url-password",
        "%a16",
        "dsn: mysql://root:{s}@10.0.0.5:3306/shop\n",
    ),
    (
        "url/mongodb-srv",
        "database-url-password",
        "%a16",
        "MONGO_URI=mongodb+srv://svc:{s}@cluster0.x1y2z.mongodb.net/prod\n",
    ),
    (
        "url/redis",
        "database-url-password",
        "%a24",
        "REDIS_URL=rediss://default:{s}@redis.acme.io:6380\n",
    ),
    (
        "url/amqp",
        "database-url-password",
        "%a20",
        "broker_url = \"amqp://worker:{s}@rabbit:5672/jobs\"\n",
    ),
    (
        "url/https-git",
        "url-credentials",
        "%a20",
        "git clone https://deploy:{s}@git.acme.io/platform/api.git\n",
    ),
    (
        "url/pip-index",
        "url-credentials",
        "%a32",
        "pip install --index-url https://__token__:{s}@pypi.acme.io/simple acme-sdk\n",
    ),
    (
        "url/ftp",
        "url-credentials",
        "%a14",
        "lftp ftp://backup:{s}@ftp.acme.io/nightly\n",
    ),
    (
        "url/smtp",
        "url-credentials",
        "%a16",
        "MAILER_DSN=smtp://mailer:{s}@smtp.acme.io:587\n",
    ),
    (
        "cli/curl-u",
        "command-line-password",
        "%a8|!|%d3",
        "curl -u admin:{s} https://api.acme.io/v1/users\n",
    ),
    (
        "cli/curl-user-quoted",
        "command-line-password",
        "%a12",
        "curl -s --user \"deploy:{s}\" https://ci.acme.io/job/build\n",
    ),
    (
        "cli/curl-bearer",
        "authorization-header",
        "%a40",
        "curl -H \"Authorization: Bearer {s}\" https://api.acme.io/v1/me\n",
    ),
    (
        "cli/mysql-p",
        "command-line-password",
        "%a10|#|%d2",
        "mysql -h db.internal -u root -p{s} shop < dump.sql\n",
    ),
    (
        "cli/mysqldump",
        "command-line-password",
        "%a12",
        "mysqldump -uroot -p{s} --single-transaction shop > shop.sql\n",
    ),
    (
        "cli/pgpassword",
        "generic-password",
        "%a14",
        "PGPASSWORD={s} psql -h db.internal -U app -d app\n",
    ),
    (
        "cli/sshpass",
        "command-line-password",
        "%a9|@|%d2",
        "sshpass -p '{s}' ssh deploy@10.0.0.7 'systemctl restart app'\n",
    ),
    (
        "cli/docker-login",
        "command-line-password",
        "%a20",
        "docker login -u ci -p {s} registry.acme.io\n",
    ),
    (
        "cli/helm-login",
        "command-line-password",
        "%a20",
        "helm registry login registry.acme.io --username ci --password {s}\n",
    ),
    (
        "cli/password-flag",
        "command-line-password",
        "%a16",
        "./manage.py createsuperuser --username root --password={s}\n",
    ),
    (
        "framework/django",
        "generic-secret",
        "django-insecure-|%w40",
        "DEBUG = False\nSECRET_KEY = '{s}'\n",
    ),
    (
        "framework/rails",
        "generic-secret",
        "%h128",
        "production:\n  secret_key_base: {s}\n",
    ),
    (
        "framework/laravel",
        "generic-secret",
        "base64:|%b43|=",
        "APP_ENV=production\nAPP_KEY={s}\n",
    ),
    (
        "framework/flask-config",
        "generic-secret",
        "%h48",
        "app.config['SECRET_KEY'] = '{s}'\n",
    ),
    (
        "framework/flask-attr",
        "generic-secret",
        "%w32",
        "app.secret_key = \"{s}\"\n",
    ),
    (
        "framework/nextauth",
        "generic-secret",
        "%b43|=",
        "NEXTAUTH_URL=https://acme.io\nNEXTAUTH_SECRET={s}\n",
    ),
    (
        "framework/authjs",
        "generic-secret",
        "%b43|=",
        "AUTH_SECRET=\"{s}\"\n",
    ),
    (
        "framework/spring-properties",
        "generic-password",
        "%a12|!",
        "spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.password={s}\n",
    ),
    (
        "framework/spring-yaml",
        "generic-password",
        "%a14",
        "spring:\n  datasource:\n    username: app\n    password: {s}\n",
    ),
    (
        "framework/dotnet-json",
        "generic-password",
        "%a12|!",
        "{\"ConnectionStrings\": {\"Default\": \"Server=db;Database=app;User Id=sa;Password={s};\"}}",
    ),
    (
        "framework/dotnet-pwd",
        "generic-password",
        "%a12",
        "Data Source=db;Initial Catalog=app;User ID=app;Pwd={s};\n",
    ),
    (
        "framework/jwt-secret",
        "generic-secret",
        "%a40",
        "JWT_SECRET={s}\n",
    ),
    (
        "framework/session-secret",
        "generic-secret",
        "%w32",
        "session:\n  SESSION_SECRET: {s}\n",
    ),
    (
        "framework/encryption-key",
        "generic-secret",
        "%h64",
        "ENCRYPTION_KEY={s}\n",
    ),
    (
        "framework/go-const",
        "generic-secret",
        "%a32",
        "const apiKey = \"{s}\"\n",
    ),
    (
        "framework/terraform",
        "generic-password",
        "%a14|!",
        "administrator_login_password = \"{s}\"\n",
    ),
    (
        "framework/k8s-secret-data",
        "kubernetes-secret-yaml",
        "%b32",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: {s}\n",
    ),
    (
        "framework/nuget",
        "nuget-config-password",
        "%a16",
        "<packageSourceCredentials>\n  <acme>\n    <add key=\"Username\" value=\"ci\" />\n    <add key=\"ClearTextPassword\" value=\"{s}\" />\n  </acme>\n</packageSourceCredentials>\n",
    ),
    (
        "framework/sidekiq",
        "sidekiq-secret",
        "%h8|:|%h8",
        "BUNDLE_GEMS__CONTRIBSYS__COM={s}\n",
    ),
    (
        "framework/npmrc",
        "npmrc-auth-token",
        "%g",
        "//registry.npmjs.org/:_authToken={s}\n",
    ),
    (
        "prose/password-is",
        "prose-password",
        "%A7|%d2|!",
        "Hi team, the password is {s} for the staging box.\n",
    ),
    (
        "prose/password-for",
        "prose-password",
        "%A8|%d3",
        "My password for the admin console is {s}, can you check why login fails?\n",
    ),
    (
        "prose/pw-label",
        "prose-password",
        "%A6|%d4",
        "user: admin\npw: {s}\n",
    ),
    (
        "prose/passwd-assign",
        "generic-password",
        "%A6|%d2|$",
        "passwd = {s}\n",
    ),
    (
        "prose/pass-label",
        "prose-password",
        "%A6|%d3",
        "Login with user admin, pass: {s}\n",
    ),
    (
        "prose/passphrase-quoted",
        "prose-password",
        "%A9|-|%d2",
        "The wifi passphrase is \"{s}\".\n",
    ),
    (
        "prose/password-was",
        "prose-password",
        "%A5|%d5",
        "fyi the old root password was {s} before the rotation\n",
    ),
];

/// Private-key fragments, as a context chunk may hold them: (name, rule id, builder).
type KeyCase = (
    &'static str,
    &'static str,
    fn(&mut Fake) -> (String, String),
);

const KEY_FRAGMENTS: &[KeyCase] = &[
    ("key/body-and-end", "private-key-end", |g| {
        let body = pem_lines(g, 640, 64, "\n");
        (body.clone(), format!("{body}\n{}\n", marker("END", "RSA ")))
    }),
    ("key/body-and-end-escaped", "private-key-end", |g| {
        let body = pem_lines(g, 300, 64, "\\n");
        (
            body.clone(),
            format!(
                "{body}\\n{}\\n\",\n  \"client_email\": \"a@b.iam\"\n",
                marker("END", "")
            ),
        )
    }),
    ("key/end-only", "private-key-end", |_| {
        let end = marker("END", "EC ");
        (end.clone(), format!("{end}\n"))
    }),
    ("key/begin-at-end", "private-key-begin", |_| {
        let begin = marker("BEGIN", "");
        (
            begin.clone(),
            format!("# deploy key, do not share\nKEY = \"\"\"\n{begin}\n"),
        )
    }),
    ("key/body-only-64", "private-key-body", |g| {
        let body = pem_lines(g, 64 * 6, 64, "\n");
        (body.clone(), format!("{body}\n"))
    }),
    ("key/body-only-70", "private-key-body", |g| {
        let body = pem_lines(g, 70 * 5, 70, "\n");
        (body.clone(), format!("{body}\n"))
    }),
    ("key/body-only-escaped", "private-key-body", |g| {
        let body = pem_lines(g, 64 * 4, 64, "\\n");
        (body.clone(), format!("\"{body}\\n\""))
    }),
    ("key/der-pkcs8-env", "private-key-der", |g| {
        let s = format!("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{}", g.pick(&b64(), 900));
        (s.clone(), format!("SIGNING_KEY={s}\n"))
    }),
    ("key/der-pkcs1-json", "private-key-der", |g| {
        let s = format!("MIIEowIBAAKCAQEA{}", g.pick(&b64(), 600));
        (s.clone(), format!("{{\"key\": \"{s}\"}}"))
    }),
    ("key/der-ec", "private-key-der", |g| {
        let s = format!("MHcCAQEEI{}", g.pick(&b64(), 150));
        (s.clone(), format!("ec_key: {s}\n"))
    }),
    ("key/openssh-body-start", "openssh-private-key-body", |g| {
        let s = format!(
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{}",
            g.pick(&b64(), 70)
        );
        (s.clone(), format!("{s}\n"))
    }),
    ("key/putty", "putty-private-key", |g| {
        let s = format!("{}\n{}", g.pick(&b64(), 64), g.pick(&b64(), 24));
        (
            s.clone(),
            format!(
                "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n{}\n{}\nPrivate-Lines: 2\n{s}\nPrivate-MAC: {}\n",
                g.pick(&b64(), 64),
                g.pick(&b64(), 16),
                g.pick(HEX, 64)
            ),
        )
    }),
];

/// A PEM marker line of a private key (`kind` is "RSA ", "EC ", "" …), assembled at run time.
fn marker(word: &str, kind: &str) -> String {
    format!("-----{word} {kind}{}{}-----", "PRIVATE", " KEY")
}

/// `len` random base64 characters in lines of `width`, joined by `sep`.
fn pem_lines(g: &mut Fake, len: usize, width: usize, sep: &str) -> String {
    let body = g.pick(&b64(), len);
    body.as_bytes()
        .chunks(width)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(sep)
}

/// A token from its spec (see the module doc).
pub fn token(g: &mut Fake, spec: &str) -> String {
    spec.split('|')
        .map(|part| match part.strip_prefix('%') {
            Some(p) if p.len() >= 2 => {
                let (class, n) = p.split_at(1);
                let n: usize = n.parse().expect("count after the class");
                match class {
                    "a" => g.pick(&alnum(), n),
                    "A" => g.pick(&format!("{}{}", super::UPPER, super::LOWER), n),
                    "h" => g.pick(HEX, n),
                    "d" => g.pick(DIGITS, n),
                    "U" => g.pick(&format!("{}{DIGITS}", super::UPPER), n),
                    "L" => g.pick(&format!("{}{DIGITS}", super::LOWER), n),
                    "b" => g.pick(&b64(), n),
                    "w" => g.pick(&b64url(), n),
                    "B" => g.pick(super::BASE32, n),
                    "c" => g.pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", n),
                    other => panic!("unknown class {other} in {spec}"),
                }
            }
            Some("g") => g.uuid(),
            _ => part.to_string(),
        })
        .collect()
}

fn fill(template: &str, var: &str, secret: &str) -> String {
    template
        .replace("{N}", var)
        .replace("{n}", &var.to_lowercase())
        .replace("{s}", secret)
}

/// The positives.
pub fn positives() -> Vec<Case> {
    let mut g = Fake::new(0xC0FE_5EC2);
    let mut out = Vec::new();
    let mut push = |name: String, expect: &'static str, secret: String, text: String| {
        assert!(
            text.contains(&secret),
            "{name}: the text must carry the secret"
        );
        out.push(Case {
            name,
            text,
            expect: Some(expect),
            secret: Some(secret),
        });
    };
    for (id, var, spec) in TOKENS {
        for (ctx, template) in TOKEN_CONTEXTS {
            let s = token(&mut g, spec);
            push(
                format!("{id}/{var}/{ctx}"),
                id,
                s.clone(),
                fill(template, var, &s),
            );
        }
    }
    for (var, spec) in NAMED {
        for (ctx, template) in NAMED_CONTEXTS {
            let s = token(&mut g, spec);
            push(
                format!("vendor/{var}/{ctx}"),
                "vendor-api-credential",
                s.clone(),
                fill(template, var, &s),
            );
        }
    }
    for (name, id, spec, template) in CONTEXTS {
        let s = token(&mut g, spec);
        push(name.to_string(), id, s.clone(), fill(template, "", &s));
    }
    for (name, id, build) in KEY_FRAGMENTS {
        let (s, text) = build(&mut g);
        push(name.to_string(), id, s, text);
    }
    out
}

/// Values that stand where a token would and are not secrets.
const PLACEHOLDERS: &[&str] = &[
    "<your-{n}>",
    "${{N}}",
    "${{ secrets.{N} }}",
    "{{ .Values.{n} }}",
    "your_{n}_here",
    "changeme",
    "\"\"",
    "$({n}_from_vault)",
];

/// The negatives: placeholders for every family, filler-shaped tokens, and realistic
/// non-secrets (ids, hashes, digests, images, public keys, prose, documentation examples).
pub fn negatives() -> Vec<Case> {
    let mut g = Fake::new(0x0DD_BA11);
    let mut out = Vec::new();
    let mut neg = |name: String, text: String| {
        out.push(Case {
            name,
            text,
            expect: None,
            secret: None,
        })
    };
    let vars = TOKENS
        .iter()
        .map(|(_, v, _)| *v)
        .chain(NAMED.iter().map(|(v, _)| *v));
    for (i, var) in vars.enumerate() {
        let p = PLACEHOLDERS[i % PLACEHOLDERS.len()];
        let q = PLACEHOLDERS[(i + 3) % PLACEHOLDERS.len()];
        neg(
            format!("placeholder/{var}/env"),
            fill(&format!("{{N}}={p}\n"), var, ""),
        );
        neg(
            format!("placeholder/{var}/yaml"),
            fill(&format!("{{n}}: {q}\n"), var, ""),
        );
    }
    // Token shapes filled with x: what documentation shows.
    for (id, var, spec) in TOKENS {
        let filler: String = spec
            .split('|')
            .map(|part| match part.strip_prefix('%') {
                Some(p) if p.len() >= 2 => "x".repeat(p[1..].parse().unwrap()),
                Some(_) => "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".to_string(),
                None => part.to_string(),
            })
            .collect();
        neg(format!("filler/{id}/{var}"), format!("{var}={filler}\n"));
    }
    for i in 0..20 {
        neg(
            format!("uuid/{i}"),
            format!("{{\"request_id\": \"{}\", \"status\": \"ok\"}}\n", g.uuid()),
        );
        neg(
            format!("sha1/{i}"),
            format!("commit {}\nAuthor: Jane <jane@acme.io>\n", g.pick(HEX, 40)),
        );
        neg(
            format!("sha256/{i}"),
            format!("{}  acme-{i}.tar.gz\n", g.pick(HEX, 64)),
        );
        neg(
            format!("integrity/{i}"),
            format!("  integrity sha512-{}==\n", g.pick(&b64(), 86)),
        );
        neg(
            format!("data-uri-png/{i}"),
            format!(
                "![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{}==)\n",
                g.pick(&b64(), 400 + 37 * i)
            ),
        );
        neg(
            format!("data-uri-svg/{i}"),
            format!(
                "<img src=\"data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCI+{}\" />\n",
                g.pick(&b64(), 200 + 11 * i)
            ),
        );
        neg(
            format!("docker-digest/{i}"),
            format!("image: ghcr.io/acme/api@sha256:{}\n", g.pick(HEX, 64)),
        );
        neg(
            format!("css-font/{i}"),
            format!(
                "@font-face {{ src: url(data:font/woff2;base64,d09GMgABAAAAA{}) format(\"woff2\"); }}\n",
                g.pick(&b64(), 300)
            ),
        );
    }
    let pem = |g: &mut Fake, word: &str, prefix: &str, width: usize| {
        format!(
            "-----BEGIN {word}-----\n{prefix}{}\n-----END {word}-----\n",
            pem_lines(g, width * 8, width, "\n")
        )
    };
    for i in 0..5 {
        neg(
            format!("pem/certificate/{i}"),
            pem(&mut g, "CERTIFICATE", "", 64),
        );
        neg(
            format!("pem/public-key/{i}"),
            pem(&mut g, "PUBLIC KEY", "", 64),
        );
        neg(
            format!("pem/csr/{i}"),
            pem(&mut g, "CERTIFICATE REQUEST", "", 64),
        );
        neg(
            format!("pem/pgp-public/{i}"),
            pem(&mut g, "PGP PUBLIC KEY BLOCK", "Version: GnuPG v2\n\n", 64),
        );
        neg(
            format!("pem/pgp-signature/{i}"),
            pem(&mut g, "PGP SIGNATURE", "Comment: signed\n\n", 64),
        );
        neg(
            format!("mime/attachment/{i}"),
            format!(
                "Content-Type: image/png;\n\tname=\"chart.png\"\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment\n\n{}\n",
                pem_lines(&mut g, 76 * 10, 76, "\n")
            ),
        );
    }
    let docs: &[(&str, &str)] = &[
        (
            "aws-docs-id",
            concat!("AWS_ACCESS_KEY_ID=AKIA", "IOSFODNN7EXAMPLE\n"),
        ),
        (
            "aws-docs-secret",
            concat!(
                "aws_secret_access_key = wJalrXUtnFEMI/",
                "K7MDENG/bPxRfiCYEXAMPLEKEY\n"
            ),
        ),
        (
            "pem-placeholder",
            "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n",
        ),
        ("password-from-env", "password: ${DB_PASSWORD}\n"),
        (
            "changeme-docs",
            "Set `password: changeme` in dev, and change it before deploying.\n",
        ),
        (
            "password-required",
            "The password is required and must be at least 12 characters long.\n",
        ),
        (
            "password-stored",
            "The password is stored in Vault under secret/app/db.\n",
        ),
        (
            "password-incorrect",
            "Error: the password is incorrect. Try again.\n",
        ),
        ("pass-count", "pass: 3\nfail: 0\n"),
        ("python-pass", "def noop():\n    pass\n"),
        ("pw-prompt", "pw = getpass.getpass()\n"),
        (
            "curl-env",
            "curl -u \"$API_USER:$API_PASSWORD\" https://api.acme.io\n",
        ),
        (
            "curl-placeholder",
            "curl -u user:password https://api.acme.io\n",
        ),
        ("mysql-prompt", "mysql -u root -p shop\n"),
        ("mysql-env", "mysql -u root -p$MYSQL_ROOT_PASSWORD shop\n"),
        (
            "docker-stdin",
            "echo \"$TOKEN\" | docker login -u ci --password-stdin ghcr.io\n",
        ),
        ("sshpass-env", "sshpass -e ssh deploy@host\n"),
        (
            "password-flag-var",
            "./manage.py createsuperuser --password \"$ADMIN_PASSWORD\"\n",
        ),
        (
            "url-vars",
            "DATABASE_URL=postgres://${PGUSER}:${PGPASSWORD}@db:5432/app\n",
        ),
        ("url-docs", "postgres://user:password@localhost:5432/app\n"),
        (
            "django-env",
            "SECRET_KEY = os.environ[\"DJANGO_SECRET_KEY\"]\n",
        ),
        (
            "rails-env",
            "secret_key_base: <%= ENV[\"SECRET_KEY_BASE\"] %>\n",
        ),
        ("laravel-empty", "APP_KEY=\n"),
        (
            "nextauth-docs",
            "NEXTAUTH_SECRET=<generate with openssl rand -base64 32>\n",
        ),
        ("spring-var", "spring.datasource.password=${DB_PASSWORD}\n"),
        (
            "dotnet-integrated",
            "Server=db;Database=app;Integrated Security=true;\n",
        ),
        (
            "k8s-secret-template",
            "kind: Secret\ndata:\n  password: {{ .Values.password | b64enc }}\n",
        ),
        (
            "discord-channel-id",
            "DISCORD_CHANNEL_ID=123456789012345678\n",
        ),
        ("datadog-site", "DATADOG_SITE=datadoghq.eu\n"),
        ("sentry-dsn-env", "SENTRY_ENVIRONMENT=production\n"),
        ("okta-domain", "OKTA_DOMAIN=dev-123456.okta.com\n"),
        ("openai-model", "OPENAI_MODEL=gpt-4o-mini-2024-07-18\n"),
        ("linear-layer", "linear_warmup_steps: 1000\n"),
        ("slack-channel", "SLACK_CHANNEL=#deploys-2024\n"),
        ("twitter-handle", "twitter_username: acme_dev\n"),
        ("jira-project", "JIRA_PROJECT_KEY=PLAT\n"),
        (
            "mapbox-public",
            "MAPBOX_PUBLIC_TOKEN=pk.eyJ1IjoiYWNtZSJ9.publicdemo\n",
        ),
        (
            "stripe-publishable",
            "STRIPE_PUBLISHABLE_KEY=pk_live_xxxxxxxxxxxxxxxxxxxxxxxx\n",
        ),
        ("semver", "\"version\": \"1.2.3-beta.4\"\n"),
        (
            "timestamps",
            "{\"created\": 1700000000000, \"token_count\": 12345678}\n",
        ),
    ];
    for (name, text) in docs {
        neg(format!("docs/{name}"), text.to_string());
    }
    out
}
