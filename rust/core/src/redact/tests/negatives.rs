//! Ordinary text comes back as it was: prose, code, hashes, ids, base64, JSON tool
//! output, logs, and secret variables set to placeholders.

use std::fmt::Write as _;

use super::fakes::{Gen, DIGITS, LOWER, UPPER};
use super::redactor;

fn assert_unchanged(text: &str) {
    let out = redactor().redact(text);
    assert!(out.found.is_empty(), "{:?} in {text:?}", out.found);
    assert_eq!(out.text, text);
}

#[test]
fn prose_is_left_alone() {
    assert_unchanged(
        "The tokenizer splits a text into tokens; a token is the smallest unit the model \
         reads. Ask the key question first: which secret does the task keep, and where? \
         They said the password policy asks for twelve characters, and that the API key \
         rotates monthly. Keep secrets out of the repository.\n\
         Token: the unit of text. Secret: something kept hidden. Password: see above.",
    );
}

#[test]
fn rust_code_is_left_alone() {
    assert_unchanged(
        r#"
fn connect(config: &Config) -> Result<Client> {
    let password = std::env::var("DATABASE_PASSWORD")?;
    let api_key: String = config.api_key.clone();
    let token = tokens[index];
    let secret = Secret::new(&password);
    let access_key = self.access_key.as_deref();
    let max_tokens = 4096;
    Client::new(&config.url, password, token)
}

struct Credentials {
    password: Option<String>,
    api_key: SecretString,
    token: u32,
}
"#,
    );
}

#[test]
fn python_code_is_left_alone() {
    assert_unchanged(
        r#"
import os

password = os.environ["DB_PASSWORD"]
api_key: str | None = None
token = tokenizer.encode(text)[0]

def login(user, password):
    client = OpenAI(api_key=api_key)
    secret_key = settings.SECRET_KEY
    return client.auth(user=user, password=password, token=get_token())

print(f"password={password}")
"#,
    );
}

#[test]
fn hashes_and_ids_are_left_alone() {
    let mut g = Gen(0xC0FF_EE00_1234_5678);
    let mut text = String::new();
    for _ in 0..50 {
        let sha1 = g.pick(&["0123456789abcdef"], 40);
        let sha256 = g.pick(&["0123456789abcdef"], 64);
        let uuid = [8, 4, 4, 4, 12]
            .map(|len| g.pick(&["0123456789abcdef"], len))
            .join("-");
        writeln!(
            text,
            "commit {sha1}\nimage sha256:{sha256}\nrequest {uuid}\n{} {}",
            &sha1[..7],
            uuid.to_uppercase()
        )
        .unwrap();
    }
    assert_unchanged(&text);
}

#[test]
fn base64_image_data_is_left_alone() {
    let mut g = Gen(0x0123_4567_89AB_CDEF);
    let data = g.pick(&[UPPER, LOWER, DIGITS, "+/"], 6000);
    assert_unchanged(&format!(
        "<img src=\"data:image/png;base64,{data}==\" alt=\"chart\">"
    ));
    let wrapped: Vec<&str> = data
        .as_bytes()
        .chunks(76)
        .map(|line| std::str::from_utf8(line).unwrap())
        .collect();
    assert_unchanged(&wrapped.join("\n"));
}

#[test]
fn json_tool_output_is_left_alone() {
    assert_unchanged(
        r#"{"id": "call_01HZX4K8M2", "type": "function", "name": "search",
"usage": {"input_tokens": 1234, "output_tokens": 56, "max_tokens": 4096},
"next_page_token": "CiAKGjBpNDd2Nmp2Zml2cXRlMGRiZWdnaHBpNmVhEAE",
"nextPageToken": "AJfQ9Q2mZ5b3N0aW5nLXRva2VuLTEyMw", "token": 128000,
"tokens": ["he", "llo"], "eos_token": "</s>", "bos_token": "<|begin_of_text|>",
"password_min_length": 12, "has_secret": false, "secret": null, "api_key": null,
"error": {"password": "Password must be at least 12 characters"},
"url": "https://api.example.com/v1/items?page=2", "etag": "W/\"5f2c9a\""}"#,
    );
}

#[test]
fn log_lines_are_left_alone() {
    assert_unchanged(
        "2024-05-01T12:00:03.123Z INFO http: GET /v1/models 200 12ms request_id=req_01HZX4K8\n\
         2024-05-01T12:00:04.001Z WARN auth: invalid token for user alice (expired)\n\
         2024-05-01T12:00:04.002Z DEBUG token: refreshed\n\
         2024-05-01T12:00:05.500Z ERROR password: must be at least 12 characters\n\
         2024-05-01T12:00:06.000Z INFO db: connected to postgres://app@db.internal:5432/main\n\
         2024-05-01T12:00:07.000Z INFO tokens used=1532 cached_tokens=1024 secret_scan=ok\n",
    );
}

#[test]
fn placeholders_are_not_secrets() {
    let aws_example = ["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCY", "EXAMPLEKEY"].concat();
    let aws_id_example = ["AKIA", "IOSFODNN7", "EXAMPLE"].concat();
    assert_unchanged(&format!(
        "password=\npassword=changeme\npassword=${{DB_PASSWORD}}\n\
         password=<your-password>\npassword=***\nPASSWORD=xxx\nDB_PASSWORD=$DB_PASSWORD\n\
         api_key: \"{{{{ .Values.apiKey }}}}\"\ntoken: ${{{{ secrets.GITHUB_TOKEN }}}}\n\
         OPENAI_API_KEY=your-api-key-here\nSECRET_KEY=%(secret)s\n\
         postgres://user:password@localhost/db\npostgres://user:${{PGPASSWORD}}@db/x\n\
         https://user:****@example.com/\nAWS_SECRET_ACCESS_KEY={aws_example}\n\
         AWS_ACCESS_KEY_ID={aws_id_example}\nGITHUB_TOKEN_PATH=/run/secrets/github\n"
    ));
}
